#!/usr/bin/env bash
# Smoke test of a live stack from outside: see smoke.py for what it checks.
#   infra/smoke/smoke.sh <chat-router base URL> <token> [<another user's token>]
exec python3 "$(dirname "${BASH_SOURCE[0]}")/smoke.py" "$@"
