#!/usr/bin/env bash
# The project's test command (`make test`): starts the local emulators if they are not
# running, creates the template's tables/queues/secrets, runs every test of the workspace
# against them and the template's IAM check, and stops the emulators again if this script
# started them.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"

emulators="$REPO_ROOT/infra/local/emulators.sh"
# Capture first: `status | grep -q` would let grep close the pipe early, and with pipefail
# the resulting SIGPIPE would read as "all running" and leave our emulators behind.
status="$("$emulators" status)"
if grep -q "not running" <<<"$status"; then
  started_here=1
  trap '"$emulators" stop' EXIT
else
  started_here=0
fi
"$emulators" start
# shellcheck source=/dev/null
source "$RUN_DIR/env"

[ "$started_here" = 1 ] && log "emulators started for this run; they stop when it ends"
# Four tests at a time, not one per core: they wait on the emulators and on timers more than
# on the CPU (chat-router's suite: 53 s with two, 41 s with four, on two cores).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
# Every target with tests: libraries, integration tests and benches (each bench runs once as a
# smoke pass); not the binaries, which have none (`test = false`; --all-targets would link an
# empty test binary for each).
cargo test --workspace --tests --benches "$@"
# The suites whose tests meet past-date checks, again with the tests' clock 800 days ahead
# (tests/src/clock.rs): a test that still used a fixed date would be refused as in the past.
# Not turns.rs: it times leases and cancels against the stores' clocks, which stay unmoved.
log "the date-sensitive suites again, the tests' clock 800 days ahead"
ahead() { TEST_CLOCK_OFFSET_DAYS=800 cargo test "$@"; }
# Each crate's integration tests are one binary; its modules are selected by name.
ahead -p chat-router --test integration -- chat:: alerts:: approval:: session:: sample_events::
ahead -p tool-worker --test integration -- alerts::
ahead -p dev-stack --test integration -- standin_bedrock::
# Least privilege: each function's DynamoDB access in template.yaml is what its code uses.
"$VENV_DIR/bin/python" "$REPO_ROOT/infra/tests/iam.py"
# The local scripts' start-up checks in the windows where a live process looks exited.
"$REPO_ROOT/infra/tests/process_wait.sh"
# The smoke test's own checks, against fake routers: it fails when it should.
"$VENV_DIR/bin/python" "$REPO_ROOT/infra/tests/smoke_selftest.py"
# Operations: log retention, alarms, dashboard, reserved concurrency, CORS origins.
"$VENV_DIR/bin/python" "$REPO_ROOT/infra/tests/ops.py"
# Gradual deployments: aliases, deployment preferences, rollback alarms, pre-traffic hooks.
"$VENV_DIR/bin/python" "$REPO_ROOT/infra/tests/deploy.py"
# README's clean-up step as written, against the emulators: bucket emptied before `sam delete`.
"$VENV_DIR/bin/python" "$REPO_ROOT/infra/tests/cleanup.py"
# `make sam-invoke` / `make sam-api`'s helpers: events to functions, routes, configuration.
"$VENV_DIR/bin/python" "$REPO_ROOT/infra/tests/sam_local_test.py"
