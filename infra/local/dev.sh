#!/usr/bin/env bash
# The whole system on this machine (`make dev` / `make down`).
#
#   infra/local/dev.sh up      install what is missing, start the emulators (tables, queues,
#                              secrets from template.yaml) and the local embeddings server,
#                              ingest the sample knowledge base, start fakes for every
#                              upstream without a key and the example external MCP server
#                              (fare_notes_mcp.py), run every function under `cargo lambda
#                              watch`, feed the tool queue to the worker, serve the web chat
#                              (WEB=0 skips it), then hold the demo chat turns (DEMO=0 skips
#                              them)
#   infra/local/dev.sh down    stop exactly what `up` started (by PID), emulators included
#   infra/local/dev.sh status  say what runs
#
# Real services instead of fakes: OPENAI_API_KEY (or OPENAI_BASE_URL for a keyless
# OpenAI-compatible server such as Ollama, with OPENAI_MODEL), SEATSAERO_API_KEY,
# DUFFEL_TOKEN, AMADEUS_CLIENT_ID + AMADEUS_CLIENT_SECRET. Cash fares come from Duffel (its
# fake, or the real one with DUFFEL_TOKEN), as deployed; from the real Amadeus when its
# keys are set and DUFFEL_TOKEN is not. LLM_PROVIDER=bedrock runs the router and the
# worker on their Bedrock client, answered by the stand-in in Bedrock's ConverseStream
# protocol (AWS_ENDPOINT_URL_BEDROCK_RUNTIME points at it; no AWS account is used).
#
# Knowledge-base embeddings: without EMBEDDINGS_BASE_URL, the local embeddings server
# (infra/local/embeddings_server.py --model use-multilingual-v3, German and English in one
# vector space, from .local/embeddings-venv) embeds the documents and the queries, so search
# is hybrid as deployed; if it is not installed or does not come up, a warning, and BM25
# only. EMBEDDINGS_BASE_URL (with EMBEDDINGS_MODEL) names a server of yours instead;
# EMBEDDINGS_BASE_URL=none: BM25 only.
#
# Ports: WATCH_PORT (9000: the functions, through the gate), FAKES_PORT_BASE (9100: cargo
# lambda watch itself, behind the gate; LLM +1, Seats.aero +2, Amadeus +3, Duffel +4, the
# example MCP server +5, the local embeddings server +6;
# EMULATOR_PORT moves the first), DYNAMODB_PORT, MOTO_PORT, WEB_PORT (5173: the web chat).
#
# The gate (`dev-stack gate`) stands in front of cargo lambda watch, which hangs for good
# once about 100 invocations of one function wait in it: it lets GATE_PER_FUNCTION (4)
# invocations of each function through at once, queues GATE_QUEUE (128) more for at most
# GATE_QUEUE_WAIT_SECS (60) s each, and answers 503 with Retry-After beyond that.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"

WATCH_PORT="${WATCH_PORT:-9000}"
FAKES_PORT_BASE="${FAKES_PORT_BASE:-9100}"
LLM_PORT=$((FAKES_PORT_BASE + 1))
SEATSAERO_PORT=$((FAKES_PORT_BASE + 2))
AMADEUS_PORT=$((FAKES_PORT_BASE + 3))
DUFFEL_PORT=$((FAKES_PORT_BASE + 4))
FARE_NOTES_PORT=$((FAKES_PORT_BASE + 5))
EMBEDDINGS_PORT=$((FAKES_PORT_BASE + 6))
LOCAL_EMBEDDINGS_MODEL=use-multilingual-v3
EMULATOR_PORT="${EMULATOR_PORT:-$FAKES_PORT_BASE}"
BASE="http://127.0.0.1:$WATCH_PORT"
ROUTER_URL="$BASE/lambda-url/chat-router"
MCP_BASE="$BASE/lambda-url/mcp-server"
DEV_ENV="$RUN_DIR/dev.env"
# Where `cargo build` puts the binaries (CARGO_TARGET_DIR when set, as cargo reads it).
BIN="${CARGO_TARGET_DIR:-$REPO_ROOT/target}/debug"
JWT_ISSUER_LOCAL="http://127.0.0.1/dev"
JWT_AUDIENCE_LOCAL="local-dev"
WEB_PORT="${WEB_PORT:-5173}"
# TRACES=1: Arize Phoenix, a trace viewer that reads the GenAI spans (docs/operations.md#traces).
PHOENIX_PORT="${PHOENIX_PORT:-6006}"
PHOENIX_VENV_DIR="$LOCAL_DIR/phoenix-venv"
PHOENIX_URL="http://127.0.0.1:$PHOENIX_PORT/"
WEB_URL="http://127.0.0.1:$WEB_PORT/"

# Processes of ours: name, a marker their command line contains, how to start them.
pidfile() { echo "$RUN_DIR/dev-$1.pid"; }

our_pid() { pid_from_file "$(pidfile "$1")" "$2"; }

# Started in its own session, so `down` can stop it with everything it spawned (cargo lambda
# watch runs each function as a child process) by signalling that one process group.
start_bg() {
  local name="$1" marker="$2"; shift 2
  local pid
  if pid="$(our_pid "$name" "$marker")"; then
    log "$name already running (pid $pid)"
    return 0
  fi
  setsid "$@" >"$RUN_DIR/dev-$name.log" 2>&1 </dev/null &
  echo $! >"$(pidfile "$name")"
  log "$name started (pid $!; log .local/run/dev-$name.log)"
}

stop_bg() {
  local name="$1" marker="$2" pid
  if pid="$(our_pid "$name" "$marker")"; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -KILL -- "-$pid" 2>/dev/null || true
    log "$name stopped (pid $pid)"
  fi
  rm -f "$(pidfile "$name")"
}

# Whether something accepts connections on 127.0.0.1:$1.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Waits until `url` gives any HTTP answer. One request with a long timeout, not a poll of
# short ones: requests abandoned while a function still builds would queue up in
# cargo lambda watch and be answered into closed connections later.
wait_for() {
  local what="$1" url="$2" seconds="$3" name="$4" code host_port pid waited=0
  host_port="${url#http://}"; host_port="${host_port%%/*}"
  pid="$(cat "$(pidfile "$name")" 2>/dev/null || echo 0)"
  wait_port "$pid" "$host_port" 120 || waited=$?
  if [ "$waited" = 1 ]; then
    die "$what exited during start-up; the end of .local/run/dev-$name.log:
$(log_tail "$RUN_DIR/dev-$name.log")"
  fi
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time "$seconds" "$url" || true)"
  case "$code" in
    000 | 5*) die "$what did not answer at $url (HTTP $code); see .local/run/dev-$name.log" ;;
  esac
}

# Which upstreams are fakes, and which prices cash fares: decided once from the developer's
# keys.
decide_fakes() {
  FAKE_LLM=1; FAKE_SEATS=1; FAKE_AMADEUS=1; FAKE_DUFFEL=1
  # The functions' local credentials are the emulators' (`local`): Bedrock is always the
  # stand-in, whatever OpenAI keys are set.
  if [ "${LLM_PROVIDER:-openai}" != bedrock ] && { [ -n "${OPENAI_API_KEY:-}" ] || [ -n "${OPENAI_BASE_URL:-}" ]; }; then FAKE_LLM=0; fi
  [ -n "${SEATSAERO_API_KEY:-}" ] && FAKE_SEATS=0
  if [ -n "${AMADEUS_CLIENT_ID:-}" ] && [ -n "${AMADEUS_CLIENT_SECRET:-}" ]; then FAKE_AMADEUS=0; fi
  [ -n "${DUFFEL_TOKEN:-}" ] && FAKE_DUFFEL=0
  # Duffel, as deployed; real Amadeus keys without a Duffel token choose Amadeus. The Amadeus
  # fake runs either way (tests may use it).
  if [ "$FAKE_AMADEUS" = 0 ] && [ "$FAKE_DUFFEL" = 1 ]; then CASH_PROVIDER=amadeus; else CASH_PROVIDER=duffel; fi
  # `fakes` is for the developer's terminal; `demo`, without setting names, is what the
  # chat shows its users (STACK_NOTICE).
  local fakes=() demo=()
  if [ "${LLM_PROVIDER:-openai}" = bedrock ]; then
    fakes+=("offline LLM stand-in over the Bedrock ConverseStream protocol (LLM_PROVIDER=bedrock)")
    demo+=("offline stand-in model")
  elif [ "$FAKE_LLM" = 1 ]; then
    fakes+=("offline LLM stand-in (set OPENAI_API_KEY or OPENAI_BASE_URL for a real model)")
    demo+=("offline stand-in model")
  fi
  if [ "$FAKE_SEATS" = 1 ]; then
    fakes+=("fake Seats.aero with recorded data (set SEATSAERO_API_KEY)")
    demo+=("sample award seats")
  fi
  if [ "$CASH_PROVIDER" = duffel ] && [ "$FAKE_DUFFEL" = 1 ]; then
    fakes+=("fake Duffel with generated offers (set DUFFEL_TOKEN)")
    demo+=("sample cash fares")
  fi
  if [ ${#fakes[@]} -eq 0 ]; then
    NOTICE=""
    STACK_NOTICE=""
    log "upstreams: all real (LLM, Seats.aero, cash fares from $CASH_PROVIDER)"
  else
    NOTICE="local stack with fakes: $(IFS=';'; echo "${fakes[*]}" | sed 's/;/; /g')"
    STACK_NOTICE="demo: $(IFS=';'; echo "${demo[*]}" | sed 's/;/; /g')"
    printf '\033[1;33m[local] NOTE:\033[0m %s\n' "$NOTICE" >&2
  fi
}

# Where the knowledge base's embeddings come from (EMBEDDINGS_URL, EMBEDDINGS_NAME for
# write_dev_env): the developer's EMBEDDINGS_BASE_URL (`none`: BM25 only), else the local
# multilingual server, started here so it loads while the functions build.
decide_embeddings() {
  LOCAL_EMBEDDINGS=0
  if [ -n "${EMBEDDINGS_BASE_URL:-}" ]; then
    EMBEDDINGS_URL="$EMBEDDINGS_BASE_URL"
    EMBEDDINGS_NAME="${EMBEDDINGS_MODEL:-}"
    [ "$EMBEDDINGS_URL" = none ] && log "knowledge base: BM25 only (EMBEDDINGS_BASE_URL=none)"
    return 0
  fi
  EMBEDDINGS_URL="http://127.0.0.1:$EMBEDDINGS_PORT"
  EMBEDDINGS_NAME="$LOCAL_EMBEDDINGS_MODEL"
  if [ ! -x "$EMBEDDINGS_VENV_DIR/bin/python" ]; then
    no_local_embeddings "the local embeddings server is not installed in .local/embeddings-venv (infra/local/install.sh installs it; see its warning above)"
  elif ! our_pid embeddings "embeddings_server.py" >/dev/null && port_open "$EMBEDDINGS_PORT"; then
    no_local_embeddings "something else listens on 127.0.0.1:$EMBEDDINGS_PORT, where the local embeddings server goes; stop it or choose another port (FAKES_PORT_BASE)"
  else
    LOCAL_EMBEDDINGS=1
    # One BLAS thread: while the builds keep the cores busy it embeds several times faster
    # than one per core.
    start_bg embeddings "embeddings_server.py" "$EMBEDDINGS_VENV_DIR/bin/python" \
      infra/local/embeddings_server.py --model "$LOCAL_EMBEDDINGS_MODEL" --port "$EMBEDDINGS_PORT" --threads 1
  fi
}

# Waits until the local embeddings server listens and serves its model; else BM25 only.
wait_for_embeddings() {
  [ "$LOCAL_EMBEDDINGS" = 1 ] || return 0
  local log_file="$RUN_DIR/dev-embeddings.log" ready=0 health=""
  wait_log_line "$(cat "$(pidfile embeddings)")" "$log_file" "serving POST http://127.0.0.1:$EMBEDDINGS_PORT/" 240 \
    || ready=$?
  [ "$ready" = 0 ] && health="$(curl -s --max-time 10 "$EMBEDDINGS_URL/health" || true)"
  case "$health" in
    *"\"model\":\"$LOCAL_EMBEDDINGS_MODEL\""*)
      log "knowledge base: hybrid search, embeddings from the local server ($LOCAL_EMBEDDINGS_MODEL at $EMBEDDINGS_URL)" ;;
    *)
      stop_bg embeddings "embeddings_server.py"
      no_local_embeddings "the local embeddings server did not come up on 127.0.0.1:$EMBEDDINGS_PORT; the end of .local/run/dev-embeddings.log:
$(log_tail "$log_file")" ;;
  esac
}

no_local_embeddings() {
  warn "$1"
  warn "knowledge base: BM25 only (EMBEDDINGS_BASE_URL=none), so a question in one language misses documents in the other; make down and make dev again once the local embeddings server is fixed"
  LOCAL_EMBEDDINGS=0
  EMBEDDINGS_URL=none
  EMBEDDINGS_NAME=""
}

# Loads infra/kb/docs into the knowledge base with the embeddings write_dev_env names;
# without any, as text only (also over documents an earlier run stored with embeddings).
ingest_kb() {
  local args=()
  [ "$EMBEDDINGS_URL" = none ] && args+=(--no-embeddings)
  (set -a; source "$DEV_ENV"; set +a; "$BIN/kb-ingest" --table "$KB_TABLE" ${args[@]+"${args[@]}"} infra/kb/docs) 2>&1 \
    | tail -n 3 >&2
}

write_dev_env() {
  # The emulators' settings plus what the functions need to find each other and the fakes.
  grep '^export ' "$RUN_DIR/env" | sed 's/^export //' >"$DEV_ENV"
  {
    echo "RUST_LOG=${RUST_LOG:-info}"
    echo "TOOL_FUNCTION_URLS=$BASE/lambda-url/{function}"
    # The MCP endpoint's public base (the emulator's prefix), and the browser origins it
    # accepts: local pages only.
    echo "MCP_PUBLIC_URL=$MCP_BASE"
    echo "MCP_ALLOWED_ORIGINS=http://127.0.0.1:*,http://localhost:*"
    # The built-in profiles, the travel profile also offering the example MCP server's tools.
    echo "AGENTS_FILE=$RUN_DIR/agents.toml"
    echo "JWT_SECRET_NAME=JwtSigningSecret"
    echo "JWT_ISSUER=$JWT_ISSUER_LOCAL"
    echo "JWT_AUDIENCE=$JWT_AUDIENCE_LOCAL"
    echo "TOOL_RETRY_BASE_SECS=${TOOL_RETRY_BASE_SECS:-2}"
    # decide_embeddings says which (none: BM25 only).
    echo "EMBEDDINGS_BASE_URL=$EMBEDDINGS_URL"
    [ -n "$EMBEDDINGS_NAME" ] && echo "EMBEDDINGS_MODEL=$EMBEDDINGS_NAME"
    # Local only: no API Gateway stands in front of the functions, so no authorizer vouches
    # for the router's calls (deployed, they are IAM-authorised; see docs/security.md).
    echo "ALLOW_UNAUTHENTICATED_TOOL_CALLS=true"
    # Local only: `chat --debug` shows the router's debug events to any caller.
    echo "DEBUG_FOR_EVERYONE=true"
    if [ "${LLM_PROVIDER:-openai}" = bedrock ]; then
      echo "LLM_PROVIDER=bedrock"
      echo "BEDROCK_MODEL_ID=offline-stand-in"
      echo "AWS_ENDPOINT_URL_BEDROCK_RUNTIME=http://127.0.0.1:$LLM_PORT"
    elif [ "$FAKE_LLM" = 1 ]; then
      echo "OPENAI_BASE_URL=http://127.0.0.1:$LLM_PORT/v1"
      echo "OPENAI_MODEL=offline-stand-in"
    else
      echo "OPENAI_BASE_URL=${OPENAI_BASE_URL:-https://api.openai.com/v1}"
      echo "OPENAI_MODEL=${OPENAI_MODEL:-gpt-4o-mini}"
    fi
    [ "$FAKE_SEATS" = 1 ] && echo "SEATSAERO_BASE_URL=http://127.0.0.1:$SEATSAERO_PORT"
    [ "$FAKE_AMADEUS" = 1 ] && echo "AMADEUS_BASE_URL=http://127.0.0.1:$AMADEUS_PORT"
    [ "$FAKE_DUFFEL" = 1 ] && echo "DUFFEL_BASE_URL=http://127.0.0.1:$DUFFEL_PORT"
    # As the template's CashFareProvider defaults to (decide_fakes says when it is Amadeus).
    echo "CASH_PROVIDER=$CASH_PROVIDER"
    # Quoted: the file is read both by `source` and by cargo lambda's env-file parser.
    [ -n "$STACK_NOTICE" ] && echo "STACK_NOTICE='$STACK_NOTICE'"
    # TRACES=1: the spans go to the local Phoenix (its OTLP/HTTP receiver shares the UI's port).
    if [ "${TRACES:-0}" = 1 ]; then
      echo "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PHOENIX_PORT"
      # The web chat's debug view links each turn to its trace there.
      echo "TRACE_VIEW_URL='http://127.0.0.1:$PHOENIX_PORT/redirects/traces/{trace_id}'"
    fi
  } >>"$DEV_ENV"
}

# TRACES=1: installs Arize Phoenix into .local/phoenix-venv (once; about 200 MB from PyPI)
# and starts it, so the functions can send it their spans.
traces_up() {
  [ "${TRACES:-0}" = 1 ] || return 0
  if [ ! -x "$PHOENIX_VENV_DIR/bin/phoenix" ]; then
    log "installing Arize Phoenix into .local/phoenix-venv (first run: a minute or two)"
    python3 -m venv "$PHOENIX_VENV_DIR" \
      && "$PHOENIX_VENV_DIR/bin/pip" install -q --disable-pip-version-check arize-phoenix \
      || die "installing Arize Phoenix failed (above); TRACES=0 make dev runs without it"
  fi
  if ! our_pid phoenix "phoenix serve" >/dev/null && port_open "$PHOENIX_PORT"; then
    die "something else listens on 127.0.0.1:$PHOENIX_PORT, where Phoenix goes; stop it or choose another port (PHOENIX_PORT)"
  fi
  mkdir -p "$RUN_DIR/phoenix"
  start_bg phoenix "phoenix serve" env PHOENIX_HOST=127.0.0.1 PHOENIX_PORT="$PHOENIX_PORT" \
    PHOENIX_WORKING_DIR="$RUN_DIR/phoenix" "$PHOENIX_VENV_DIR/bin/phoenix" serve
  wait_port "$(cat "$(pidfile phoenix)")" "127.0.0.1:$PHOENIX_PORT" 180 \
    || die "Phoenix did not listen on $PHOENIX_PORT; see .local/run/dev-phoenix.log"
  log "traces: every function sends its spans to Arize Phoenix, $PHOENIX_URL"
}

# The built-in agents file with the example external MCP server (infra/local/fare_notes_mcp.py)
# declared and listed by the travel profile.
write_agents_file() {
  sed 's/^\[agents\.travel\]$/&\nmcp_servers = ["fare_notes"]/' config/agents.toml >"$RUN_DIR/agents.toml"
  grep -q '^mcp_servers = \["fare_notes"\]' "$RUN_DIR/agents.toml" \
    || die "config/agents.toml has no [agents.travel] line to add the example MCP server to"
  cat >>"$RUN_DIR/agents.toml" <<EOF

[mcp_servers.fare_notes]
url = "http://127.0.0.1:$FARE_NOTES_PORT/mcp"
allow = ["lookup_fare_note", "slow_note", "injected_note"]
timeout_secs = 3
EOF
}

cmd_up() {
  local started=$SECONDS
  "$REPO_ROOT/infra/local/emulators.sh" start
  decide_fakes
  decide_embeddings
  log "building the functions and helpers (first run: a few minutes)"
  # One binary per build, as `cargo lambda watch` builds them (`cargo run --bin X`): building
  # several packages at once unifies their dependencies' features into other artifacts.
  # Every function (deploy-hook runs only in AWS), then the local helpers.
  local bins=() dir
  for dir in "$REPO_ROOT"/functions/*/; do
    dir="$(basename "$dir")"
    [ "$dir" != deploy-hook ] && [ -f "$REPO_ROOT/functions/$dir/src/main.rs" ] && bins+=("$dir")
  done
  for bin in "${bins[@]}" kb-ingest dev-stack chat; do
    log "  building $bin"
    if ! cargo build --bin "$bin" >"$RUN_DIR/dev-build.log" 2>&1; then
      tail -n 30 "$RUN_DIR/dev-build.log" >&2
      die "building $bin failed; the whole output is in .local/run/dev-build.log"
    fi
  done
  wait_for_embeddings
  traces_up
  write_dev_env
  write_agents_file

  log "ingesting the sample knowledge base (infra/kb/docs; unchanged documents are skipped)"
  if ! ingest_kb; then
    [ "$LOCAL_EMBEDDINGS" = 1 ] || die "ingesting the sample knowledge base failed (above)"
    stop_bg embeddings "embeddings_server.py"
    no_local_embeddings "ingesting the sample knowledge base with the local embeddings server failed (above; .local/run/dev-embeddings.log)"
    write_dev_env
    ingest_kb || die "ingesting the sample knowledge base failed (above)"
  fi

  local fake_args=()
  [ "$FAKE_LLM" = 1 ] && fake_args+=(--llm-port "$LLM_PORT")
  [ "$FAKE_SEATS" = 1 ] && fake_args+=(--seatsaero-port "$SEATSAERO_PORT")
  [ "$FAKE_AMADEUS" = 1 ] && fake_args+=(--amadeus-port "$AMADEUS_PORT")
  [ "$FAKE_DUFFEL" = 1 ] && fake_args+=(--duffel-port "$DUFFEL_PORT")
  if [ ${#fake_args[@]} -gt 0 ]; then
    start_bg fakes "dev-stack fakes" "$BIN/dev-stack" fakes "${fake_args[@]}"
    local ready=0
    wait_log_line "$(cat "$(pidfile fakes)")" "$RUN_DIR/dev-fakes.log" '\[fakes\] ready' 480 || ready=$?
    case "$ready" in
      1) die "the fakes exited during start-up; the end of .local/run/dev-fakes.log:
$(log_tail "$RUN_DIR/dev-fakes.log")" ;;
      2) die "the fakes were not ready within 120 s; see .local/run/dev-fakes.log" ;;
    esac
  fi

  # Before the functions, so their cold start finds its tools.
  start_bg fare-notes "fare_notes_mcp.py" "$VENV_DIR/bin/python" infra/local/fare_notes_mcp.py \
    --port "$FARE_NOTES_PORT" --calls-log "$RUN_DIR/fare-notes-calls.log"
  wait_port "$(cat "$(pidfile fare-notes)")" "127.0.0.1:$FARE_NOTES_PORT" 60 \
    || die "the example MCP server did not listen on $FARE_NOTES_PORT; see .local/run/dev-fare-notes.log"

  # cargo lambda watch listens on EMULATOR_PORT; clients and the functions reach it through
  # the gate on WATCH_PORT. A port some other program holds is named before anything starts.
  if ! our_pid watch "lambda watch" >/dev/null && port_open "$EMULATOR_PORT"; then
    die "something else listens on 127.0.0.1:$EMULATOR_PORT (where cargo lambda watch goes); stop it or choose another port (EMULATOR_PORT or FAKES_PORT_BASE)"
  fi
  if ! our_pid gate "dev-stack gate" >/dev/null && port_open "$WATCH_PORT"; then
    die "something else listens on 127.0.0.1:$WATCH_PORT; stop it (a stack started before the gate existed: make down) or choose another port (WATCH_PORT)"
  fi
  start_watch
  local ready=0
  wait_port "$(cat "$(pidfile watch)")" "127.0.0.1:$EMULATOR_PORT" 120 || ready=$?
  case "$ready" in
    1) die "cargo lambda watch exited during start-up; the end of .local/run/dev-watch.log:
$(log_tail "$RUN_DIR/dev-watch.log")" ;;
    2) die "cargo lambda watch did not listen on $EMULATOR_PORT within 60 s; see .local/run/dev-watch.log" ;;
  esac
  # The gate also starts a function whose process died again (cargo lambda watch does not):
  # it replaces the emulator through `restart-watch` below and says so in its log.
  start_bg gate "dev-stack gate" "$BIN/dev-stack" gate --listen "127.0.0.1:$WATCH_PORT" \
    --upstream "127.0.0.1:$EMULATOR_PORT" --watch-pidfile "$(pidfile watch)" \
    --restart "$REPO_ROOT/infra/local/dev.sh" restart-watch
  wait_log_line "$(cat "$(pidfile gate)")" "$RUN_DIR/dev-gate.log" '\[gate\] ready' 120 || ready=$?
  case "$ready" in
    1) die "the gate exited during start-up; the end of .local/run/dev-gate.log:
$(log_tail "$RUN_DIR/dev-gate.log")" ;;
    2) die "the gate was not ready within 30 s; see .local/run/dev-gate.log" ;;
  esac
  # Any HTTP answer (401: no token) means the router is up; the first request builds it.
  wait_for "the chat-router under cargo lambda watch" "$ROUTER_URL/chats/ping/tool-calls" 300 watch
  # The chat CLI's default router URL, whatever WATCH_PORT is (tools/chat/src/args.rs).
  echo "$ROUTER_URL" >"$RUN_DIR/router-url"

  start_bg bridge "dev-stack sqs-bridge" bash -c "set -a; source '$DEV_ENV'; set +a; exec '$BIN/dev-stack' sqs-bridge --invoke-url '$BASE/2015-03-31/functions/tool-worker/invocations'"

  web_up

  log "up in $((SECONDS - started)) s. Chat with: cargo run -q -p chat -- \"your message\"   (router: $ROUTER_URL)"
  log "MCP endpoint (docs/mcp.md): $MCP_BASE/mcp   (a bearer token: python3 infra/local/dev_token.py .local/run/jwt-secret my-user)"
  if [ "${DEMO:-1}" != 0 ]; then
    demo
  fi
  if [ "${WEB:-1}" != 0 ]; then
    log "chat in the browser: open $WEB_URL"
  fi
}

# The web chat (web/, docs/web.md): its packages and build when missing or older than its
# sources, then its server on 127.0.0.1:$WEB_PORT, which proxies /api to the router and hands
# the page a dev token it mints (never written to a file).
web_up() {
  [ "${WEB:-1}" = 0 ] && return 0
  "$REPO_ROOT/infra/local/web.sh" build
  start_bg web "web/scripts/serve.mjs" node web/scripts/serve.mjs --port "$WEB_PORT" --dist web/dist \
    --router "$ROUTER_URL" --jwt-secret-file "$RUN_DIR/jwt-secret"
  wait_for "the web chat's server" "$WEB_URL" 30 web
}

# The demo: a fare alert and its approval, a handoff, a knowledge-base question, then a flight
# search and its follow-up, the chat the README's next command continues.
demo() {
  local date
  date="$(days_from_today 60)"
  export CHAT_URL="$ROUTER_URL"
  # The flight chat comes last: the README's next command follows it up.
  log "demo: a fare alert, which waits for your approval"
  cargo run -q -p chat -- --new "Alert me when business FRA to JFK in March drops below 60,000 miles"
  log "demo: its approval (--approve last: the call that waits)"
  # A real model may ask about the alert first instead of setting it: nothing waits then.
  cargo run -q -p chat -- --approve last || log "demo: no call waited for approval"
  log "demo: a handoff to the support agent"
  cargo run -q -p chat -- "I need help with a refund"
  log "demo: a knowledge-base question to the support agent"
  cargo run -q -p chat -- --new --agent support "Wie funktionieren Meilen-Upgrades?"
  log "demo: a flight search in a new chat (events render as they stream in), with quick replies"
  cargo run -q -p chat -- --new "Business class for 2 adults from Frankfurt to New York on $date"
  log "demo: a follow-up in the same chat"
  cargo run -q -p chat -- "Und in der First Class?"
}

cmd_down() {
  rm -f "$RUN_DIR/router-url"
  stop_bg web "web/scripts/serve.mjs"
  stop_bg bridge "dev-stack sqs-bridge"
  stop_bg gate "dev-stack gate"
  stop_bg watch "lambda watch"
  stop_bg fakes "dev-stack fakes"
  stop_bg fare-notes "fare_notes_mcp.py"
  stop_bg embeddings "embeddings_server.py"
  stop_bg phoenix "phoenix serve"
  "$REPO_ROOT/infra/local/emulators.sh" stop
}

start_watch() {
  start_bg watch "lambda watch" "$VENV_DIR/bin/cargo-lambda" lambda watch \
    --invoke-address 127.0.0.1 --invoke-port "$EMULATOR_PORT" --env-file "$DEV_ENV" --ignore-changes
}

# A new cargo lambda watch in place of the running one, which starts no function again
# whose process died; the gate runs this when it finds one dead. The old log is kept beside.
cmd_restart_watch() {
  stop_bg watch "lambda watch"
  [ -f "$RUN_DIR/dev-watch.log" ] && mv "$RUN_DIR/dev-watch.log" "$RUN_DIR/dev-watch.previous.log"
  start_watch
  wait_port "$(cat "$(pidfile watch)")" "127.0.0.1:$EMULATOR_PORT" 120 \
    || die "cargo lambda watch did not come back; see .local/run/dev-watch.log"
}

cmd_status() {
  local pid name
  for pair in "fakes:dev-stack fakes" "watch:lambda watch" "gate:dev-stack gate" "bridge:dev-stack sqs-bridge" "web:web/scripts/serve.mjs" "fare-notes:fare_notes_mcp.py" "embeddings:embeddings_server.py" "phoenix:phoenix serve"; do
    name="${pair%%:*}"
    if pid="$(our_pid "$name" "${pair#*:}")"; then echo "$name: running (pid $pid)"; else echo "$name: not running"; fi
  done
  "$REPO_ROOT/infra/local/emulators.sh" status
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  demo) demo ;;
  restart-watch) cmd_restart_watch ;;
  *) echo "usage: $0 up|down|status|demo|restart-watch" >&2; exit 2 ;;
esac
