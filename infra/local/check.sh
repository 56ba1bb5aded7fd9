#!/usr/bin/env bash
# A developer's fast check before pushing (`make check`): formatting, then clippy and the
# tests of the crates a change touched and of the workspace crates that depend on them, in
# one build (clippy is the compiler of the workspace's own crates, as in CI). A change
# outside every crate (Cargo.toml, Cargo.lock, .cargo/, .config/) runs the whole workspace;
# one that only touches docs runs the crates that read the docs (docs-check, openapi).
#
#   infra/local/check.sh            what differs from the merge base with the upstream
#                                   branch (else origin/main, else main): committed, staged,
#                                   unstaged or untracked
#   CHECK_BASE=<rev> infra/local/check.sh   compare with another revision
#   CHECK_ALL=1 infra/local/check.sh        the whole workspace
#
# Starts the emulators if they are not running (and stops them again), like `make test`.
# It does not replace `make test`, which also runs cargo deny, the date-shifted rerun and
# the template checks.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"

log "cargo fmt --check"
cargo fmt --all -- --check || die "formatting differs: run cargo fmt --all"

# The branch's upstream, else origin/main, else main: commits not yet pushed count too.
base="${CHECK_BASE:-}"
if [ -z "$base" ]; then
  for ref in '@{upstream}' origin/main main; do
    base="$(git merge-base HEAD "$ref" 2>/dev/null)" && break
  done
fi
[ -n "$base" ] || base="$(git rev-parse HEAD)"
changed="$( { git diff --name-only "$base"; git ls-files --others --exclude-standard; } | sort -u)"
selection="$(python3 "$REPO_ROOT/infra/local/touched_crates.py" ${CHECK_ALL:+--all} <<<"$changed")" \
  || die "could not map the changed files to crates (above)"
if [ -z "$selection" ]; then
  log "no crate touched since $(git rev-parse --short "$base"): nothing to build or test"
  exit 0
fi
if [ "$selection" = "--workspace" ]; then
  log "clippy and tests: the whole workspace"
else
  log "clippy and tests of: ${selection//-p /}"
fi

"$REPO_ROOT/infra/local/install.sh"
emulators="$REPO_ROOT/infra/local/emulators.sh"
status="$("$emulators" status)"
if grep -q "not running" <<<"$status"; then trap '"$emulators" stop' EXIT; fi
"$emulators" start
# shellcheck source=/dev/null
source "$RUN_DIR/env"

export RUSTC_WORKSPACE_WRAPPER="${RUSTC_WORKSPACE_WRAPPER:-clippy-driver}"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# shellcheck disable=SC2086 # the selection is a list of cargo arguments
cargo test $selection --tests --benches
log "check passed"
