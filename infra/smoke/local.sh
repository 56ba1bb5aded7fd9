#!/usr/bin/env bash
# The smoke test against the local stack (`make dev` first): two users of its own, so the
# foreign-chat check uses a real chat of another user.
source "$(dirname "${BASH_SOURCE[0]}")/../local/common.sh"
cd "$REPO_ROOT"
[ -f "$RUN_DIR/jwt-secret" ] || die "no local stack (no .local/run/jwt-secret): run make dev first"
token() { python3 infra/local/dev_token.py "$RUN_DIR/jwt-secret" "smoke-$1-$(date +%s)"; }
exec infra/smoke/smoke.sh "http://127.0.0.1:${WATCH_PORT:-9000}/lambda-url/chat-router" "$(token a)" "$(token b)"
