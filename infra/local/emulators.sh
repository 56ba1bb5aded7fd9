#!/usr/bin/env bash
# Local AWS emulators: Amazon's DynamoDB Local and moto (SQS, Secrets Manager).
#
#   infra/local/emulators.sh start    install if needed, start both, create the template's
#                                     tables/queues/secrets, write .local/run/env
#   infra/local/emulators.sh stop     stop exactly the processes `start` started (by PID)
#   infra/local/emulators.sh status   say what runs
#
# Ports: DYNAMODB_PORT (8000), MOTO_PORT (5000). `source .local/run/env` points the AWS SDKs
# and the project's table/queue/secret variables at the emulators.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

pidfile() { echo "$RUN_DIR/$1.pid"; }

# See `pid_from_file` (common.sh).
our_pid() { pid_from_file "$(pidfile "$1")" "$2"; }

answers() { curl -s -o /dev/null --max-time 2 "$1"; }

wait_until_answers() {
  local name="$1" url="$2" pid="$3"
  for _ in $(seq 1 120); do
    answers "$url" && return 0
    proc_alive "$pid" || die "$name exited during start-up; the end of $RUN_DIR/$name.log:
$(log_tail "$RUN_DIR/$name.log")"
    sleep 0.5
  done
  die "$name did not answer at $url within 60 s; see $RUN_DIR/$name.log"
}

start_one() {
  local name="$1" marker="$2" url="$3"; shift 3
  local pid
  if pid="$(our_pid "$name" "$marker")"; then
    log "$name already running (pid $pid) at $url"
    return 0
  fi
  answers "$url" && die "something else answers at $url; stop it or choose another port (DYNAMODB_PORT / MOTO_PORT)"
  "$@" >"$RUN_DIR/$name.log" 2>&1 &
  pid=$!
  echo "$pid" >"$(pidfile "$name")"
  wait_until_answers "$name" "$url" "$pid"
  log "$name started (pid $pid) at $url"
}

stop_one() {
  local name="$1" marker="$2" pid
  if pid="$(our_pid "$name" "$marker")"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    log "$name stopped (pid $pid)"
  fi
  rm -f "$(pidfile "$name")"
}

cmd_start() {
  "$REPO_ROOT/infra/local/install.sh"
  mkdir -p "$RUN_DIR"
  # DynamoDB Local has no bind-address option: it listens on every interface of this
  # machine. It holds only test data; keep the port closed to other hosts. Its CORS allows
  # no web origin (the default is any), so a page in the developer's browser cannot read or
  # write the tables; the SDKs do not use CORS.
  start_one dynamodb DynamoDBLocal.jar "$DYNAMODB_URL" \
    bash -c "cd '$DYNAMODB_DIR' && exec java -Xms64m -Xmx512m -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar -inMemory -sharedDb -disableTelemetry -cors http://127.0.0.1:$DYNAMODB_PORT -port $DYNAMODB_PORT"
  start_one moto moto_server "$MOTO_URL" \
    "$VENV_DIR/bin/moto_server" -H 127.0.0.1 -p "$MOTO_PORT"
  "$VENV_DIR/bin/python" "$REPO_ROOT/infra/local/provision.py" \
    --template "$REPO_ROOT/template.yaml" --dynamodb "$DYNAMODB_URL" --moto "$MOTO_URL" \
    --env-file "$RUN_DIR/env"
  log "emulators ready; load their settings with: source .local/run/env"
}

cmd_stop() {
  stop_one moto moto_server
  stop_one dynamodb DynamoDBLocal.jar
}

cmd_status() {
  local pid
  for pair in dynamodb:DynamoDBLocal.jar moto:moto_server; do
    if pid="$(our_pid "${pair%%:*}" "${pair#*:}")"; then echo "${pair%%:*}: running (pid $pid)"; else echo "${pair%%:*}: not running"; fi
  done
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
