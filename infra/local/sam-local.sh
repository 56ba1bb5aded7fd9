#!/usr/bin/env bash
# What `sam local` needs on this machine, opt-in (`make sam-local` / `make sam-local-down`).
#
#   infra/local/sam-local.sh up      install and start what is missing, each step skipped when
#                                    done: a Docker engine, arm64 emulation, the base image
#   infra/local/sam-local.sh down    stop the Docker engine `up` started (by PID), nothing else
#   infra/local/sam-local.sh status  say what there is
#   infra/local/sam-local.sh invoke  every sample event through `sam local invoke` (sam_local.py)
#   infra/local/sam-local.sh api     `sam local start-api`, one request per route (sam_local.py)
#
# - Docker: an engine that answers `docker info` is used as it is and never touched. Else
#   Debian's docker.io is installed and `dockerd --userland-proxy=false` started (log and PID
#   in .local/run/). With the userland proxy (Docker's default) some invocations end in
#   "No response from invoke container" (2 of 26 in one run on the 2-core machine).
# - arm64: the functions are arm64 (Graviton); qemu-user-static's aarch64 handler runs them
#   on another CPU. It is registered with the F flag, so it works inside containers too.
# - The base image (written to .local/run/sam-base-image for `make sam-invoke`): Amazon's
#   public.ecr.aws/lambda/provided:al2023 for arm64 if it is present or can be pulled; else
#   one built here from Debian's arm64 packages (mmdebstrap): glibc, libgcc, busybox as
#   /bin/sh (SAM adds its runtime emulator to the image with a RUN step) and a CA bundle
#   (without it the functions stop at start: "no native root CA certificates found").
#
# Needs root for apt, dockerd and binfmt_misc (sudo when not root).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"

AMAZON_IMAGE="public.ecr.aws/lambda/provided:al2023"
LOCAL_IMAGE="tool-calling/lambda-base:arm64"
IMAGE_FILE="$RUN_DIR/sam-base-image"
DOCKERD_PID="$RUN_DIR/dockerd.pid"
DOCKERD_LOG="$RUN_DIR/dockerd.log"
BINFMT=/proc/sys/fs/binfmt_misc
# The Debian release the local base image is made of.
BASE_SUITE="${SAM_BASE_SUITE:-bookworm}"

# The prefix of commands that need root: none as root, else sudo.
ROOT=()
[ "$(id -u)" = 0 ] || ROOT=(sudo)

as_root() {
  [ ${#ROOT[@]} -eq 0 ] || command -v sudo >/dev/null || die "this step needs root (or sudo): $*"
  "${ROOT[@]}" "$@"
}

# Installs Debian packages that are missing: pairs of a command (or a file) and its package.
apt_install() {
  local missing=() cmd
  while [ $# -gt 0 ]; do
    cmd="$1"
    if [ "${cmd#/}" != "$cmd" ]; then [ -e "$cmd" ] || missing+=("$2"); else command -v "$cmd" >/dev/null || missing+=("$2"); fi
    shift 2
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "install ${missing[*]} (no apt-get here)"
  log "installing ${missing[*]} (apt)"
  # Waits for another apt run to finish instead of failing on its lock.
  as_root apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

engine_answers() { docker info >/dev/null 2>&1; }

start_engine() {
  local pid
  if pid="$(pid_from_file "$DOCKERD_PID" dockerd)"; then
    log "dockerd already running (pid $pid)"
  else
    if engine_answers; then
      log "a Docker engine answers already; using it as it is"
      return 0
    fi
    apt_install dockerd docker.io
    # A package install may have started the engine (systemd): then that one is used.
    if engine_answers; then
      log "a Docker engine answers already; using it as it is"
      return 0
    fi
    log "starting dockerd --userland-proxy=false (log .local/run/dockerd.log)"
    as_root true
    "${ROOT[@]}" setsid dockerd --userland-proxy=false >"$DOCKERD_LOG" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$DOCKERD_PID"
  fi
  for _ in $(seq 1 120); do
    engine_answers && { log "dockerd answers (pid $pid)"; return 0; }
    proc_alive "$pid" || die "dockerd exited during start-up; the end of .local/run/dockerd.log:
$(log_tail "$DOCKERD_LOG" 10)"
    sleep 0.5
  done
  die "dockerd did not answer within 60 s; see .local/run/dockerd.log (not root: may your user use /var/run/docker.sock?)"
}

register_arm64() {
  [ "$(uname -m)" = aarch64 ] && return 0
  apt_install /usr/lib/binfmt.d/qemu-aarch64.conf qemu-user-static
  if [ ! -e "$BINFMT/register" ]; then
    as_root mount -t binfmt_misc binfmt_misc "$BINFMT"
  fi
  if [ -e "$BINFMT/qemu-aarch64" ]; then
    return 0
  fi
  log "registering qemu's aarch64 handler (binfmt_misc)"
  grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf | as_root tee "$BINFMT/register" >/dev/null
}

is_arm64_image() {
  [ "$(docker image inspect --format '{{.Architecture}}' "$1" 2>/dev/null)" = arm64 ]
}

# Amazon's image if present or pullable, else the local one (built once).
choose_image() {
  if is_arm64_image "$AMAZON_IMAGE" \
    || timeout 120 docker pull --quiet --platform linux/arm64 "$AMAZON_IMAGE" >/dev/null 2>&1; then
    log "base image: $AMAZON_IMAGE (arm64)"
    echo "$AMAZON_IMAGE" >"$IMAGE_FILE"
    return 0
  fi
  if is_arm64_image "$LOCAL_IMAGE"; then
    log "base image: $LOCAL_IMAGE (built earlier)"
  else
    build_local_image
  fi
  echo "$LOCAL_IMAGE" >"$IMAGE_FILE"
}

build_local_image() {
  local dir="$LOCAL_DIR/sam-base"
  log "no $AMAZON_IMAGE here; building $LOCAL_IMAGE from Debian's arm64 packages ($BASE_SUITE)"
  apt_install mmdebstrap mmdebstrap
  rm -rf "$dir" && mkdir -p "$dir"
  # Only unpacked (no package scripts run): the libraries a Rust binary links to, busybox
  # for a shell, and the certificates.
  as_root mmdebstrap --quiet --variant=extract --architectures=arm64 \
    --include=libc6,libgcc-s1,ca-certificates,busybox-static \
    "$BASE_SUITE" "$dir/rootfs.tar" >"$dir/mmdebstrap.log" 2>&1 \
    || die "mmdebstrap failed; see .local/sam-base/mmdebstrap.log:
$(log_tail "$dir/mmdebstrap.log" 10)"
  # The RUN steps run arm64 busybox under qemu. The CA bundle is what update-ca-certificates
  # would write: every certificate the package ships, concatenated.
  cat >"$dir/Dockerfile" <<'EOF'
FROM scratch
ADD rootfs.tar /
RUN ["/bin/busybox", "--install", "-s", "/bin"]
RUN mkdir -p /var/task /var/runtime /opt /tmp /etc/ssl/certs && chmod 1777 /tmp \
 && cat /usr/share/ca-certificates/*/*.crt >/etc/ssl/certs/ca-certificates.crt
ENV LANG=C.UTF-8 PATH=/var/lang/bin:/usr/local/bin:/usr/bin:/bin:/opt/bin LAMBDA_TASK_ROOT=/var/task LAMBDA_RUNTIME_DIR=/var/runtime
WORKDIR /var/task
EOF
  docker build --quiet --platform linux/arm64 -t "$LOCAL_IMAGE" "$dir" >"$dir/build.log" 2>&1 \
    || die "building $LOCAL_IMAGE failed; see .local/sam-base/build.log:
$(log_tail "$dir/build.log" 10)"
  rm -f "$dir/rootfs.tar"
  log "built $LOCAL_IMAGE"
}

cmd_up() {
  local started=$SECONDS
  mkdir -p "$RUN_DIR"
  command -v docker >/dev/null || apt_install docker docker.io
  start_engine
  register_arm64
  choose_image
  log "sam local ready in $((SECONDS - started)) s: sam local invoke --invoke-image $(cat "$IMAGE_FILE") --skip-pull-image ..."
}

cmd_down() {
  local pid
  if pid="$(pid_from_file "$DOCKERD_PID" dockerd)"; then
    as_root kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do proc_alive "$pid" || break; sleep 0.5; done
    proc_alive "$pid" && die "dockerd (pid $pid) did not stop within 30 s"
    log "dockerd stopped (pid $pid)"
  else
    log "no dockerd of ours runs (an engine started elsewhere is left alone)"
  fi
  rm -f "$DOCKERD_PID"
}

cmd_status() {
  local pid
  if pid="$(pid_from_file "$DOCKERD_PID" dockerd)"; then
    echo "dockerd: running (pid $pid, ours)"
  elif engine_answers; then
    echo "docker engine: answers (not started by us)"
  else
    echo "docker engine: none"
  fi
  if [ -e "$BINFMT/qemu-aarch64" ]; then echo "arm64 emulation: registered"; else echo "arm64 emulation: not registered"; fi
  echo "base image: $(cat "$IMAGE_FILE" 2>/dev/null || echo none chosen)"
}

# `make sam-invoke` / `make sam-api`: against `make dev`'s stack, with what `sam build` made.
cmd_sam() {
  engine_answers || die "no Docker engine answers: run make sam-local first"
  [ -f "$IMAGE_FILE" ] || die "no base image chosen yet: run make sam-local first"
  [ -x "$VENV_DIR/bin/sam" ] || die "the SAM CLI is missing: run ./infra/local/install.sh"
  "$VENV_DIR/bin/python" "$REPO_ROOT/infra/local/sam_local.py" "$1" --image "$(cat "$IMAGE_FILE")" \
    --api-port "${SAM_API_PORT:-3100}" --jobs "${SAM_INVOKE_JOBS:-2}"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  invoke | api) cmd_sam "$1" ;;
  *) echo "usage: $0 up|down|status|invoke|api" >&2; exit 2 ;;
esac
