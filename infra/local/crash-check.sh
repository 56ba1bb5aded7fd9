#!/usr/bin/env bash
# A router that dies mid-turn, against a running `make dev` (docs/operations.md, "A host
# that dies"): a flight turn whose award search the fake Seats.aero slows down, its
# chat-router process killed (SIGKILL) a second after `tool_started`; right after the kill
# another user's message, then the same request again (same Idempotency-Key), as a client
# whose stream broke sends it. Prints what each got and how long it took; fails unless the
# resend ends with `done` (or the retryable `interrupted`) within 15 s and the other user's
# turn ends with `done`.
set -euo pipefail
cd "$(dirname "$0")/../.."
run=.local/run
[ -f "$run/router-url" ] || { echo "crash-check: start the local stack first (make dev)" >&2; exit 2; }
router="$(cat "$run/router-url")"
seats="http://127.0.0.1:$(( ${FAKES_PORT_BASE:-9100} + 2 ))"
watch_pid="$(cat "$run/dev-watch.pid")"
out="$(mktemp -d)"
token() { python3 infra/local/dev_token.py "$run/jwt-secret" "$1"; }
# The chat-router process cargo lambda watch runs (a descendant of the watch we started).
router_pid() {
  local pids=("$watch_pid") found=() pid child
  while [ ${#pids[@]} -gt 0 ]; do
    pid="${pids[0]}"; pids=("${pids[@]:1}")
    for child in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
      pids+=("$child")
      [ "$(cat /proc/"$child"/comm 2>/dev/null)" = chat-router ] && found+=("$child")
    done
  done
  echo "${found[@]:-}"
}
chat() { # user key message output
  curl -sN --max-time 60 "$router/chat" -H "authorization: Bearer $(token "$1")" \
    -H 'content-type: application/json' -H "idempotency-key: $2" \
    -d "{\"message\": \"$3\"}" >"$4"
}
events() { grep '^event:' "$1" | cut -d' ' -f2 | tr '\n' ' '; }
ms() { date +%s%3N; }

user="crash-$(date +%s)"
key="crash-key-$(date +%s%N)"
# A date no earlier run searched, so that no result cache answers before the kill.
message="Business class award flights FRA to JFK on $(date -u -d "+$(( 30 + RANDOM % 300 )) days" +%Y-%m-%d)"
# The router must be up and warm before the kill, as a deployed one would be.
chat "$user-warm" "warm-$key" "hallo" "$out/warm" || true
curl -sf -X POST "$seats/__fake/latency" -d '{"delay_ms": 6000}' >/dev/null
chat "$user" "$key" "$message" "$out/first" &
for _ in $(seq 1 100); do grep -q '^event: tool_started' "$out/first" 2>/dev/null && break; sleep 0.1; done
grep -q '^event: tool_started' "$out/first" || { echo "crash-check: no tool_started: $(events "$out/first")" >&2; exit 1; }
sleep 1
pid="$(router_pid)"
[ -n "$pid" ] || { echo "crash-check: no chat-router process under the watch" >&2; exit 1; }
kill -KILL $pid
echo "killed chat-router ($pid) after: $(events "$out/first")"
if grep -q '^event: done' "$out/first"; then
  echo "crash-check: the turn ended before the kill; run it again" >&2; exit 1
fi
wait || true

start=$(ms)
chat "other-$user" "other-$key" "hallo" "$out/other" || true
echo "another user's turn: $(events "$out/other")in $(( $(ms) - start )) ms"
start=$(ms)
chat "$user" "$key" "$message" "$out/resend" || true
took=$(( $(ms) - start ))
echo "the resend: $(events "$out/resend")in $took ms"

ended=$(grep -A1 '^event: error' "$out/resend" | grep -c interrupted || true)
if ! grep -q '^event: done' "$out/resend" || [ "$took" -gt 15000 ]; then
  echo "crash-check: FAILED: the resend did not end within 15 s" >&2; exit 1
fi
if grep -q '^event: error' "$out/resend" && [ "$ended" = 0 ]; then
  echo "crash-check: FAILED: the resend ended with an error other than interrupted" >&2; exit 1
fi
if ! grep -q '^event: done' "$out/other" || grep -q '^event: error' "$out/other"; then
  echo "crash-check: FAILED: the other user's turn did not end with done" >&2; exit 1
fi
grep -q '^event: final' "$out/resend" && echo "crash-check: passed (the turn was taken over and answered)" \
  || echo "crash-check: passed (the turn ended interrupted, retryable)"
rm -rf "$out"
