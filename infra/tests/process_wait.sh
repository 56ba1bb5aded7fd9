#!/usr/bin/env bash
# The local scripts' process checks (infra/local/common.sh) in the windows that once made
# a live process count as exited: many processes checked the moment they were started
# (still in fork or execve), one that is slow to listen, and one that dies before it does.
source "$(dirname "${BASH_SOURCE[0]}")/../local/common.sh"

dir="$(mktemp -d)"
started=()
cleanup() {
  for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { printf 'process_wait: FAIL: %s\n' "$*" >&2; exit 1; }

# 1. Checked at once after start, in batches, as `make dev` does for each process.
starts=200 missed=0
for i in $(seq 1 "$starts"); do
  setsid sleep 120 >/dev/null 2>&1 </dev/null &
  echo $! >"$dir/$i.pid"
  started+=("$!")
  pid_from_file "$dir/$i.pid" "sleep 120" >/dev/null || missed=$((missed + 1))
done
[ "$missed" = 0 ] || fail "$missed of $starts live processes were taken for exited right after start"
for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done

# 2. Another program under a PID we wrote down is not ours.
setsid sleep 121 >/dev/null 2>&1 </dev/null &
started+=("$!")
echo $! >"$dir/other.pid"
pid_from_file "$dir/other.pid" "some-other-program" >/dev/null \
  && fail "a process running another program was taken for ours"

# 3. Slow to listen: waited for, not given up on.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python3 -c "
import socket, time
time.sleep(2)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(); time.sleep(60)" &
slow=$!
started+=("$slow")
result=0
wait_port "$slow" "127.0.0.1:$port" 20 || result=$?
[ "$result" = 0 ] || fail "a process that listens after 2 s was not waited for (result $result)"

# 4. Dies before it listens: reported as gone at once, not after the whole wait.
bash -c 'sleep 0.5; echo "cannot bind: address in use" >&2; exit 3' 2>"$dir/dying.log" &
dying=$!
began=$SECONDS
result=0
wait_port "$dying" "127.0.0.1:1" 120 || result=$?
[ "$result" = 1 ] || fail "a process that exited was not reported as exited (result $result)"
[ $((SECONDS - began)) -le 5 ] || fail "an exited process was noticed only after $((SECONDS - began)) s"
grep -q "address in use" <(log_tail "$dir/dying.log") || fail "the log's end does not name the reason"


# 5. A ready line written late is waited for; a process that exits without it is reported.
bash -c "sleep 2; echo '[svc] ready' >>'$dir/late.log'; sleep 60" &
late=$!
started+=("$late")
result=0
wait_log_line "$late" "$dir/late.log" '\[svc\] ready' 80 || result=$?
[ "$result" = 0 ] || fail "a ready line written after 2 s was not waited for (result $result)"
bash -c "echo 'port taken' >>'$dir/gone.log'; exit 1" &
gone=$!
began=$SECONDS
result=0
wait_log_line "$gone" "$dir/gone.log" '\[svc\] ready' 480 || result=$?
[ "$result" = 1 ] || fail "a process that exited before its ready line was not reported (result $result)"
[ $((SECONDS - began)) -le 5 ] || fail "its exit was noticed only after $((SECONDS - began)) s"

echo "process_wait: ok ($starts starts checked at once, a slow start and a late ready line waited for, early exits named)"
