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
