#!/usr/bin/env bash
# Contract check: schemathesis runs the OpenAPI document (docs/openapi.json) against the
# local stack. Start it first (`make dev`, `DEMO=0 make dev` is enough); CI runs this
# between `make dev` and `make down`.
#
#   infra/tests/contract.sh        WATCH_PORT (9000) as for make dev; CONTRACT_MAX_EXAMPLES (5)
#
# Checks on every answer: no 5xx (not_a_server_error), every answer matches its documented
# schema (response_schema_conformance), and every 4xx/5xx is the JSON error envelope
# (error_envelope, infra/tests/contract_hooks.py). Generated input is both valid and
# invalid (`--mode all`), so bad input must come back as a 4xx envelope.
#
# Left out, with the reason:
# - the public twins of the tool routes (`/flights/award`, `/flights/cash`, `/kb/search`):
#   the same handler as their `/internal/...` routes, which are run; only API Gateway's
#   authorizer tells them apart, and the local stack has none;
# - event streams are only checked to be 200 `text/event-stream` here (schemathesis reads
#   JSON bodies); their events are checked against the document by
#   tools/openapi/tests/events.rs.
source "$(dirname "${BASH_SOURCE[0]}")/../local/common.sh"
cd "$REPO_ROOT"

WATCH_PORT="${WATCH_PORT:-9000}"
BASE="http://127.0.0.1:$WATCH_PORT/lambda-url"
MAX_EXAMPLES="${CONTRACT_MAX_EXAMPLES:-5}"
ST="$VENV_DIR/bin/schemathesis"
REPORT_DIR="$RUN_DIR/contract"

[ -x "$ST" ] || die "schemathesis is missing: run ./infra/local/install.sh"
[ -f "$RUN_DIR/jwt-secret" ] || die "no local stack (no .local/run/jwt-secret): run make dev first"
mkdir -p "$REPORT_DIR"

# A dev token as the chat client mints it (HS256 with the local stack's key), for a user of
# its own so the run does not touch a developer's chats.
TOKEN="$("$VENV_DIR/bin/python" - "$RUN_DIR/jwt-secret" <<'PY'
import base64, hashlib, hmac, json, sys, time
secret = open(sys.argv[1], encoding="utf-8").read().strip().encode()
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
now = int(time.time())
claims = {"sub": "contract-check", "iss": "http://127.0.0.1/dev", "aud": "local-dev",
          "iat": now, "exp": now + 3600}
head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + b64(json.dumps(claims).encode())
print(head + "." + b64(hmac.new(secret, head.encode(), hashlib.sha256).digest()))
PY
)"

# One schemathesis run against one function: its base URL, then filters.
contract() {
  local function="$1"; shift
  log "contract: $function"
  PYTHONPATH="$REPO_ROOT/infra/tests" SCHEMATHESIS_HOOKS=contract_hooks "$ST" run docs/openapi.json \
    --url "$BASE/$function" \
    --header "Authorization: Bearer $TOKEN" \
    --checks not_a_server_error,response_schema_conformance \
    --mode all --phases examples,coverage,fuzzing \
    --max-examples "$MAX_EXAMPLES" --seed 1 --workers 2 \
    --request-timeout 60 --no-color \
    --report junit --report-dir "$REPORT_DIR" --report-junit-path "$REPORT_DIR/$function.xml" \
    "$@"
}

started=$SECONDS
contract chat-router --exclude-path-regex '^/(internal/)?(flights|kb)/'
contract seatsaero-search --include-path /internal/flights/award
contract amadeus-search --include-path /internal/flights/cash
contract kb-retrieve --include-path /internal/kb/search
log "contract: passed in $((SECONDS - started)) s (reports in .local/run/contract)"
