#!/usr/bin/env bash
# Contract check: schemathesis runs the OpenAPI document (docs/openapi.json) against the
# local stack. Start it first (`make dev`, `DEMO=0 make dev` is enough); CI runs this
# between `make dev` and `make down`.
#
#   infra/tests/contract.sh   WATCH_PORT (9000) as for make dev; CONTRACT_MAX_EXAMPLES (5) per
#                             operation; CONTRACT_RUN_SECS (120): the most one function's run may take
#
# Checks on every answer: no 5xx (not_a_server_error), every answer matches its documented
# schema (response_schema_conformance), and every 4xx/5xx is the JSON error envelope
# (error_envelope, infra/tests/contract_hooks.py). Generated input is both valid and
# invalid (`--mode all`), so bad input must come back as a 4xx envelope.
#
# Event streams are checked event by event: each `data` against its event's schema.
# Before the run, one chat turn (a flight search with the fake LLM) makes a chat with tool
# calls and a turn log, whose ids the routes that need existing resources are given, so they
# answer with real records instead of 404.
#
# Left out, with the reason:
# - the public twins of the tool routes (`/flights/award`, `/flights/cash`, `/kb/search`):
#   the same handler as their `/internal/...` routes, which are run; only API Gateway's
#   authorizer tells them apart, and the local stack has none;
# - failures that are the local emulator's own 500 for a header or body that is not UTF-8
#   (`cargo lambda watch` cannot put it into a Lambda event, so no function sees it):
#   filter_failure in contract_hooks.py drops exactly those.
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
TOKEN="$("$VENV_DIR/bin/python" infra/local/dev_token.py "$RUN_DIR/jwt-secret" contract-check)"

# Each tool function answers once before the turn below calls it: a function's first
# invocation starts its process under `cargo lambda watch`, and a router call that gives up
# on a slow start can leave the emulator's runtime connection broken.
warm() {
  curl -sS -o /dev/null --max-time 120 -X POST "$BASE/$1" -H 'content-type: application/json' -d "$2" \
    || die "$1 did not answer; see .local/run/dev-watch.log"
}
log "contract: the tool functions' first invocations"
date="$(days_from_today 60)"
warm seatsaero-search/internal/flights/award "{\"origin\": \"FRA\", \"destination\": \"JFK\", \"departureDate\": \"$date\", \"travelClass\": \"BUSINESS\"}"
warm cash-search/internal/flights/cash "{\"origin\": \"FRA\", \"destination\": \"JFK\", \"departureDate\": \"$date\", \"travelClass\": \"BUSINESS\"}"
warm kb-retrieve/internal/kb/search '{"query": "Meilen"}'

# One turn to have something to read: its chat, its turn and a tool call of it.
# A seeding turn that fails says what the functions logged meanwhile: CI keeps nothing else.
seed_turn() {
  local out="$1" body="$2"
  curl -sS -N --max-time 120 "$BASE/chat-router/chat" -H "authorization: Bearer $TOKEN" \
    -H 'content-type: application/json' -d "$body" >"$out" && return 0
  log "the seeding turn failed; what it received:"
  log_tail "$out" 20 >&2
  log "the end of .local/run/dev-watch.log:"
  log_tail "$RUN_DIR/dev-watch.log" 60 >&2
  die "the seeding turn did not complete (see above)"
}
log "contract: one chat turn to give the routes existing ids"
seed_turn "$REPORT_DIR/seed-turn.txt" "{\"message\": \"Business class from Frankfurt to New York on $date\"}"
read -r CHAT_ID TURN_ID CALL_ID < <("$VENV_DIR/bin/python" - "$REPORT_DIR/seed-turn.txt" <<'PY'
import json, sys
ids = {}
for line in open(sys.argv[1], encoding="utf-8"):
    if line.startswith("data: "):
        data = json.loads(line[6:])
        ids.setdefault("chat", data.get("chat_id"))
        ids.setdefault("turn", data.get("turn_id"))
        if data.get("job_id"):
            ids.setdefault("call", data["job_id"])
print(ids.get("chat") or "", ids.get("turn") or "", ids.get("call") or "")
PY
)
[ -n "$CHAT_ID" ] && [ -n "$TURN_ID" ] && [ -n "$CALL_ID" ] \
  || die "the seeding turn gave no chat, turn or tool call (.local/run/contract/seed-turn.txt)"
# A chat of its own for DELETE /chats/{chat_id}: schemathesis also feeds ids it read from
# GET /chats to other operations, so the first chat would otherwise be deleted under them.
seed_turn "$REPORT_DIR/seed-delete.txt" '{"message": "Hello"}'
DELETE_ID="$(sed -n 's/^data: {"chat_id":"\([^"]*\)".*/\1/p' "$REPORT_DIR/seed-delete.txt" | head -n 1)"
[ -n "$DELETE_ID" ] || die "the second seeding turn gave no chat (.local/run/contract/seed-delete.txt)"
cat >"$REPORT_DIR/schemathesis.toml" <<TOML
[[operations]]
include-operation-id = ["deleteChat"]
parameters = { "path.chat_id" = "$DELETE_ID" }

[[operations]]
include-operation-id = ["listMessages", "listToolCalls", "listRefusedCalls"]
parameters = { "path.chat_id" = "$CHAT_ID" }

[[operations]]
include-operation-id = ["getToolCall", "cancelToolCall"]
parameters = { "path.chat_id" = "$CHAT_ID", "path.call_id" = "$CALL_ID" }

[[operations]]
include-operation-id = ["turnEvents", "cancelTurn"]
parameters = { "path.chat_id" = "$CHAT_ID", "path.turn_id" = "$TURN_ID" }
TOML

# One schemathesis run against one function: its base URL, then filters. Run from the
# report directory, where schemathesis keeps its files. Bounded in time: a function process
# that stopped under the emulator would otherwise leave every request waiting.
contract() {
  local function="$1" status=0; shift
  log "contract: $function"
  contract_run "$function" "$@" || status=$?
  if [ "$status" != 0 ] && [ "$status" != 124 ] && only_not_ours "$REPORT_DIR/$function.xml"; then
    # Faults of the emulator or of schemathesis itself, not of the function: the same seed
    # again runs the same cases, so a real fault fails the second run too.
    log "contract: $function: only the emulator or schemathesis failed (above); running again with the same seed"
    cp "$REPORT_DIR/$function.xml" "$REPORT_DIR/$function.first-run.xml"
    status=0
    contract_run "$function" "$@" || status=$?
  fi
  if [ "$status" = 124 ]; then
    die "contract: $function did not finish within ${CONTRACT_RUN_SECS:-120} s; the end of .local/run/dev-watch.log:
$(log_tail "$RUN_DIR/dev-watch.log" 10)"
  fi
  [ "$status" = 0 ] || die "contract: $function failed (report: .local/run/contract/$function.xml)"
}

# Whether every fault in a junit report is not the function's:
# - a body the emulator began with a NUL (cargo lambda watch takes the streaming prelude's
#   8-NUL delimiter as one frame; when its chunk arrives split, a NUL is left before the body);
# - the emulator's own 500 page (`httpstatuses.com`; the functions answer with the envelope);
# - an error of schemathesis itself (`<error>`, e.g. hypothesis's "AST constructor recursion
#   depth mismatch"), which sent nothing.
only_not_ours() {
  local failures errors theirs
  failures="$(grep -c '<failure' "$1" 2>/dev/null)" || failures=0
  errors="$(grep -c '<error' "$1" 2>/dev/null)" || errors=0
  theirs="$(grep -cE '^ *`\\x00|httpstatuses\.com' "$1" 2>/dev/null)" || theirs=0
  [ $((failures + errors)) -gt 0 ] && [ "$theirs" -ge "$failures" ]
}

contract_run() {
  local function="$1"; shift
  (cd "$REPORT_DIR" && PYTHONPATH="$REPO_ROOT/infra/tests" SCHEMATHESIS_HOOKS=contract_hooks \
    timeout "${CONTRACT_RUN_SECS:-120}" "$ST" --no-color --config-file "$REPORT_DIR/schemathesis.toml" run "$REPO_ROOT/docs/openapi.json" \
    --url "$BASE/$function" \
    --header "Authorization: Bearer $TOKEN" \
    --checks not_a_server_error,response_schema_conformance \
    --mode all --phases examples,coverage,fuzzing \
    --max-examples "$MAX_EXAMPLES" --seed 1 --workers 2 --generation-database none \
    --request-timeout 30 \
    --report junit,ndjson --report-junit-path "$REPORT_DIR/$function.xml" \
    --report-ndjson-path "$REPORT_DIR/$function.ndjson" \
    "$@")
}

started=$SECONDS
contract chat-router --exclude-path-regex '^/(internal/)?(flights|kb)/'
contract seatsaero-search --include-path /internal/flights/award
contract cash-search --include-path /internal/flights/cash
contract kb-retrieve --include-path /internal/kb/search
log "contract: passed in $((SECONDS - started)) s (reports in .local/run/contract)"
