#!/usr/bin/env bash
# The web chat (web/, docs/web.md): its packages, build and tests.
#
#   infra/local/web.sh build   npm ci in web/ when its packages are missing or older than
#                              package-lock.json, then the page (web/dist) when older than its
#                              sources; `make dev` runs this before it serves the page
#   infra/local/web.sh test    the unit tests (Vitest; `make web-test`), then the page's build
#                              and its size (at most 150 KB gzipped)
#   infra/local/web.sh e2e     the end-to-end tests in Chromium against the running stack
#                              (`make web-e2e`, after `make dev`); installs Debian's chromium
#                              when it is missing. WEB_PORT (5173) and FAKES_PORT_BASE (9100)
#                              as for make dev; the screenshots go to .local/run/web-e2e/
#   infra/local/web.sh chromium  only the Chromium install, when it is missing (CI runs it
#                              while it compiles)
#
# npm needs only the package registry: no install script downloads anything, and the tests
# drive the system's Chromium (CHROMIUM, default /usr/bin/chromium), never a downloaded one.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"

WEB_PORT="${WEB_PORT:-5173}"
BUILD_LOG="$RUN_DIR/web-build.log"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"

packages() {
  command -v npm >/dev/null || die "npm is missing: install Node.js 20.19 or later"
  mkdir -p "$RUN_DIR"
  if [ ! -f web/node_modules/.package-lock.json ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
    log "installing the web chat's packages (npm ci in web/)"
    (cd web && npm ci --no-audit --no-fund) >"$BUILD_LOG" 2>&1 \
      || die "npm ci in web/ failed; the end of .local/run/web-build.log:
$(log_tail "$BUILD_LOG" 15)"
  fi
}

build() {
  packages
  if [ ! -f web/dist/index.html ] || [ -n "$(find web/src web/public web/index.html web/package-lock.json \
    web/vite.config.ts docs/openapi.json -newer web/dist/index.html -print -quit)" ]; then
    log "building the web chat (web/dist)"
    (cd web && npm run build) >>"$BUILD_LOG" 2>&1 \
      || die "building the web chat failed; the end of .local/run/web-build.log:
$(log_tail "$BUILD_LOG" 15)"
  fi
}

chromium() {
  [ -x "$CHROMIUM" ] && return 0
  [ "$CHROMIUM" = /usr/bin/chromium ] || die "no Chromium at CHROMIUM=$CHROMIUM"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  command -v apt-get >/dev/null || die "Chromium is missing and there is no apt-get: install chromium, or set CHROMIUM"
  log "installing Chromium (Debian's chromium package)"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
  [ -x "$CHROMIUM" ] || die "apt-get installed no $CHROMIUM"
}

e2e() {
  packages
  chromium
  [ -f "$RUN_DIR/jwt-secret" ] || die "no local stack (no .local/run/jwt-secret): run make dev first"
  local url="http://127.0.0.1:$WEB_PORT/"
  curl -sf -o /dev/null --max-time 10 "$url" || die "the web chat does not answer at $url: run make dev first (same WEB_PORT)"
  mkdir -p "$RUN_DIR/web-e2e"
  (cd web && WEB_URL="$url" JWT_SECRET_FILE="$RUN_DIR/jwt-secret" WEB_E2E_DIR="$RUN_DIR/web-e2e" \
    SEATSAERO_FAKE_URL="http://127.0.0.1:$((${FAKES_PORT_BASE:-9100} + 2))" CHROMIUM="$CHROMIUM" npm run e2e)
  log "screenshots: .local/run/web-e2e/"
}

case "${1:-}" in
  build) build ;;
  test) packages && (cd web && npm test && npm run build && npm run size -- --max-gz-kb 150) ;;
  e2e) e2e ;;
  chromium) chromium ;;
  *) echo "usage: $0 build|test|e2e|chromium" >&2; exit 2 ;;
esac
