#!/usr/bin/env bash
# docs/adding-a-tool.md, executed: in a scratch copy of the committed tree, follow the guide
# (infra/tests/add-a-tool/follow.py) to add a second in-process tool and a second tool with
# its own function, named after the guide's examples (award_value_copy,
# search_knowledge_base_copy in kb-retrieve-copy), then build and test what the guide's
# Checklist says must pass. Fails when a step of the guide cannot be followed, when the new
# tools touch a file the Checklist does not name, or when the build or a test fails.
#
#   infra/tests/add-a-tool.sh            the guide, followed; then the self-test below
#   infra/tests/add-a-tool.sh selftest   only the self-test: a copy of the guide whose
#                                        Checklist misses a file must fail, naming that file
#   ADD_A_TOOL_GUIDE=path infra/tests/add-a-tool.sh   follow another version of the guide
#   ADD_A_TOOL_REV=commit infra/tests/add-a-tool.sh   in a copy of that commit, not HEAD
#
# Needs ./infra/local/install.sh (the virtualenv, DynamoDB Local). Emulators on
# ADD_A_TOOL_DYNAMODB_PORT / ADD_A_TOOL_MOTO_PORT (18100 / 15100), stopped on exit. Builds
# into the main checkout's target/ so that dependencies are reused: the scratch workspace's
# root is one directory above its tree, so the scratch's own crates get other artifact names
# than the checkout's and neither build overwrites the other's.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$REPO/infra/tests/add-a-tool"
GUIDE="$(realpath "${ADD_A_TOOL_GUIDE:-$REPO/docs/adding-a-tool.md}")"
PY="$REPO/.local/venv/bin/python"
[ -x "$PY" ] || { echo "add-a-tool: run ./infra/local/install.sh first" >&2; exit 1; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}" CARGO_INCREMENTAL=0

start=$(date +%s)
say() { printf '\033[1;36m[add-a-tool %4ss]\033[0m %s\n' "$(( $(date +%s) - start ))" "$*" >&2; }

scratch=""
emulators=""
# The scratch copy's own crates build into the shared target/ (about 1 GB of test binaries);
# what was written there after this stamp goes with the scratch copy. A build of the
# checkout that ran meanwhile only has to link again.
stamp="$CARGO_TARGET_DIR/.add-a-tool-started"
mkdir -p "$CARGO_TARGET_DIR"
touch "$stamp"
cleanup() {
  if [ -n "$emulators" ]; then
    (cd "$scratch/ws/tree" && LOCAL_DIR="$scratch/local" DYNAMODB_PORT="$DYNAMODB_PORT" MOTO_PORT="$MOTO_PORT" \
      ./infra/local/emulators.sh stop >/dev/null 2>&1) || true
  fi
  [ -z "$scratch" ] || rm -rf "$scratch"
  if [ -d "$CARGO_TARGET_DIR/debug" ]; then
    find "$CARGO_TARGET_DIR/debug" -newer "$stamp" \( -type f -o -type l \) -delete 2>/dev/null || true
    find "$CARGO_TARGET_DIR/debug" -mindepth 2 -type d -empty -delete 2>/dev/null || true
  fi
  rm -f "$stamp"
}
trap cleanup EXIT

# A scratch copy of the committed tree, as a git repository, so that what following the
# guide changed can be listed.
new_tree() {
  local tree="$1"
  mkdir -p "$tree"
  git -C "$REPO" archive "${ADD_A_TOOL_REV:-HEAD}" | tar -x -C "$tree"
  git -C "$tree" init -q
  git -C "$tree" add -A
  git -C "$tree" -c user.name=add-a-tool -c user.email=add-a-tool@localhost commit -q -m base
}

# The wrong case: the guide without its Checklist line for the module list must fail, and
# name shared/agent-tools/src/lib.rs.
selftest() {
  local dir="$scratch/selftest" out
  new_tree "$dir/tree"
  grep -v 'in `shared/agent-tools/src/lib.rs`' "$GUIDE" >"$dir/guide.md"
  ! cmp -s "$GUIDE" "$dir/guide.md" || { echo "add-a-tool selftest: the Checklist has no line for shared/agent-tools/src/lib.rs to drop" >&2; exit 1; }
  if out="$("$PY" "$HERE/follow.py" apply "$dir/guide.md" "$dir/tree" 2>&1)"; then
    echo "add-a-tool selftest: a guide whose Checklist misses shared/agent-tools/src/lib.rs was followed without complaint" >&2
    exit 1
  fi
  grep -q "shared/agent-tools/src/lib.rs" <<<"$out" || { echo "add-a-tool selftest: the failure does not name shared/agent-tools/src/lib.rs:" >&2; echo "$out" >&2; exit 1; }
  say "selftest: a Checklist without shared/agent-tools/src/lib.rs fails as it should:"
  sed -n '/following the guide failed/,$p' <<<"$out" >&2
  rm -rf "$dir"
}

scratch="$(mktemp -d)"
if [ "${1:-}" = selftest ]; then selftest; exit 0; fi
[ -z "${1:-}" ] || { echo "usage: $0 [selftest]" >&2; exit 2; }

say "following $(realpath --relative-to="$REPO" "$GUIDE") in a scratch copy of ${ADD_A_TOOL_REV:-HEAD}"
tree="$scratch/ws/tree"
new_tree "$tree"
"$PY" "$HERE/follow.py" apply "$GUIDE" "$tree"
names="$("$PY" "$HERE/follow.py" commands "$GUIDE")"
field() { "$PY" -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$names" "$1"; }
tool="$(field tool)"; function="$(field function)"
"$PY" "$HERE/workspace.py" "$tree"

cd "$tree"
# A command of the build or the tests; when it fails, which files its errors are in, and
# which of them the Checklist does not name (a step the guide lacks, most likely).
run() {
  local log="$scratch/run.log"
  if "$@" 2>&1 | tee "$log"; then return 0; fi
  local files unnamed
  files="$(grep -oE -- '--> (tree/)?[^: ]+' "$log" | sed -E 's/^--> (tree\/)?//' | sort -u | tr '\n' ' ')"
  # shellcheck disable=SC2086
  unnamed="$("$PY" "$HERE/follow.py" unnamed "$GUIDE" "$tree" $files)"
  echo "add-a-tool: after following the guide, \`$*\` failed; errors in: ${files:-(none named)}" >&2
  [ -z "$unnamed" ] || echo "add-a-tool: the guide's Checklist does not name: $unnamed" >&2
  exit 1
}
# "Before you push, run cargo fmt --all".
run cargo fmt --all
say "the guide's sh blocks, for the new tools"
"$PY" -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])["sh"]))' "$names" | while IFS= read -r command; do
  [ -n "$command" ] || continue
  say "\$ $command"
  run bash -c "$command" </dev/null
done

say "the tests that catch a forgotten piece"
run cargo test -q -p domain --lib -- tool_call
run cargo test -q -p agent-tools --lib -- "$tool"
run cargo test -q -p agent --lib -- every_declared_tool texts
run cargo test -q -p openapi --test integration -- committed::

say "template checks"
"$REPO/.local/venv/bin/cfn-lint" template.yaml
SAM_CLI_TELEMETRY=0 "$REPO/.local/venv/bin/sam" validate --lint --region us-east-1
"$PY" infra/tests/iam.py
"$PY" infra/tests/deploy.py

say "emulators for the function's and the router's tests"
export DYNAMODB_PORT="${ADD_A_TOOL_DYNAMODB_PORT:-18100}" MOTO_PORT="${ADD_A_TOOL_MOTO_PORT:-15100}"
mkdir -p "$scratch/local/run"
ln -s "$REPO/.local/venv" "$scratch/local/venv"
ln -s "$REPO/.local/dynamodb-local" "$scratch/local/dynamodb-local"
# The local embeddings server's virtualenv (make dev's), so the install step does not fetch it.
if [ -d "$REPO/.local/embeddings-venv" ]; then
  ln -s "$REPO/.local/embeddings-venv" "$scratch/local/embeddings-venv"
fi
emulators=1
LOCAL_DIR="$scratch/local" ./infra/local/emulators.sh start
# shellcheck disable=SC1091
source "$scratch/local/run/env"
# The Checklist's `make docs`: the generated tables take the new tools and settings.
say "make docs"
run env LOCAL_DIR="$scratch/local" ./infra/local/docs.sh
# The tests the guide points at: the handler's, the search rig's and the sample events'
# (modules of the crate's one integration-test binary).
run cargo test -q -p "$function" --lib
run cargo test -q -p "$function" --test integration -- search:: sample_events:: validation::
run cargo test -q -p chat-router --test integration -- offered flight_search_streams_the_contract_events
run cargo test -q -p deploy-hook

say "the files the new tools touched, against the Checklist"
"$PY" "$HERE/workspace.py" undo "$tree"
"$PY" "$HERE/follow.py" check "$GUIDE" "$tree"

say "passed: the guide, followed for $tool and $(field function_tool) ($function), builds and passes its checks"
selftest
