#!/usr/bin/env bash
# Tool-calling evals (`make eval`, docs/evals.md): starts the local emulators if they are not
# running (the runtime keeps its chats there), then runs the dataset through the real runtime
# against the model your environment names, or the offline stand-in when it names none.
# Arguments go to the runner: `make eval EVAL_ARGS="--only arguments --limit 20"`.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"

emulators="$REPO_ROOT/infra/local/emulators.sh"
# Captured first, as in test.sh: a pipe into grep -q could end in SIGPIPE under pipefail.
status="$("$emulators" status)"
if grep -q "not running" <<<"$status"; then
  trap '"$emulators" stop' EXIT
fi
"$emulators" start

# The emulators' settings, without losing the developer's model settings or real AWS
# credentials for Bedrock (the emulators accept any credentials; .local/run/env sets fakes).
keep=(AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_REGION
      LLM_PROVIDER OPENAI_BASE_URL OPENAI_MODEL BEDROCK_MODEL_ID)
declare -A saved=()
for name in "${keep[@]}"; do
  if [ -n "${!name+x}" ]; then saved[$name]="${!name}"; fi
done
# shellcheck source=/dev/null
source "$RUN_DIR/env"
for name in "${!saved[@]}"; do export "$name=${saved[$name]}"; done

# shellcheck disable=SC2086
cargo run -q -p evals -- ${EVAL_ARGS:-} "$@"
