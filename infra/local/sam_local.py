"""`sam local` against the local stack (`make dev`), with what `sam build` made:

    sam_local.py invoke   every sample event (events/<function>/*.json) through
                          `sam local invoke`, each status asserted (`make sam-invoke`)
    sam_local.py api      `sam local start-api`, one request per HTTP API route of the
                          template, each status asserted (`make sam-api`)
    sam_local.py routes   list the HTTP API routes of the built template

Run by infra/local/sam-local.sh with the virtualenv's Python (it has the SAM CLI, whose YAML
loader reads the template's `!Ref` tags). Options: --image (the base image `make sam-local`
chose), --api-port (3100, or the next free one), --jobs (invocations at a time, 2).

The functions get the configuration they get under `cargo lambda watch`: the file `make dev`
writes (.local/run/dev.env), with four changes that only `sam local` needs:

- SAM passes a function only the variables its template declares: a copy of the built
  template (.local/run/sam/template.yaml) declares every name of dev.env in Globals, and
  the values come in through --env-vars.
- A container is on Docker's bridge network, where 127.0.0.1 is the container itself: URLs
  of the local stack name the bridge's gateway instead, and while this script runs it
  forwards each such port of the gateway that nobody listens on to 127.0.0.1. (SAM's
  `--docker-network host` does not put the container on the host's network.)
- The local stack's tokens are HS256: JwtVerification=hs256.
- Files on this machine are not in the containers: without AGENTS_FILE the functions use the
  agents file compiled in (so the example MCP server of `make dev` is not offered here).

Expected results are in the event files' names: `search-200.json` is status 200, and the tool
worker's `poison-in-batch-1.json` reports one failed message of its batch.
"""

import argparse
import ipaddress
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import dev_token  # noqa: E402  (beside this file)

PARAMETERS = ["JwtVerification=hs256"]
# The worker's events end in the number of failed messages, not in an HTTP status.
BATCH_FUNCTIONS = {"tool-worker"}
LOOPBACK_URL = re.compile(r"http://127\.0\.0\.1:(\d+)")


class Failure(Exception):
    """Something a developer has to fix before the run can work, with what to do."""


def parse_template(path):
    from samcli.yamlhelper import yaml_parse

    return yaml_parse(Path(path).read_text(encoding="utf-8"))


def functions(template):
    """Binary name -> logical id, for every function built from one of our binaries."""
    found = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") == "AWS::Serverless::Function":
            binary = resource.get("Metadata", {}).get("BuildProperties", {}).get("Binary")
            if binary:
                found.setdefault(binary, logical_id)
    return found


def http_routes(template):
    """(method, path, logical id) of every HttpApi/Api event, sorted."""
    routes = []
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        for event in (resource.get("Properties", {}).get("Events") or {}).values():
            if event.get("Type") in ("HttpApi", "Api"):
                props = event.get("Properties", {})
                routes.append((props["Method"].upper(), props["Path"], logical_id))
    return sorted(routes)


def read_env_file(path):
    """KEY=VALUE lines (values may be quoted), as dev.sh writes them."""
    env = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.removeprefix("export ").strip()] = value
    return env


# Variables naming a file on this machine, which a container cannot read.
HOST_FILES = ("AGENTS_FILE",)


def for_containers(env, gateway):
    """The values with each http://127.0.0.1:PORT turned into the gateway's address, and the
    ports that were named so. Other mentions of 127.0.0.1 (the tokens' issuer) stay; variables
    that name a file on this machine are left out."""
    env = {k: v for k, v in env.items() if k not in HOST_FILES}
    ports = set()

    def swap(match):
        ports.add(int(match.group(1)))
        return f"http://{gateway}:{match.group(1)}"

    return {k: LOOPBACK_URL.sub(swap, v) for k, v in env.items()}, sorted(ports)


def expected_result(event_file):
    match = re.search(r"-(\d+)\.json$", Path(event_file).name)
    if not match:
        raise Failure(f"{event_file}: the file name must end in -<expected>.json")
    return int(match.group(1))


def local_template(template, build_dir, names):
    """The built template with every name in `names` declared in Globals (value empty) and
    code paths made absolute, so that the copy can live outside the build directory."""
    globals_env = (
        template.setdefault("Globals", {})
        .setdefault("Function", {})
        .setdefault("Environment", {})
        .setdefault("Variables", {})
    )
    for name in names:
        globals_env.setdefault(name, "")
    for resource in template.get("Resources", {}).values():
        props = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str):
            props["CodeUri"] = str((Path(build_dir) / props["CodeUri"]).resolve())
    return template


def status_of(binary, output):
    """What an invocation answered: the HTTP status, or the worker's failed messages."""
    text = output.decode("utf-8", errors="replace").strip()
    if not text:
        raise ValueError("no response")
    if binary in BATCH_FUNCTIONS:
        return len(json.loads(text)["batchItemFailures"])
    # A streamed response (chat-router, mcp-server) is a JSON prelude, eight NUL bytes, the
    # body. `sam local invoke` hands it over whole once the function has finished; a turn
    # (an event stream) that answered 200 must have reached its `done` event.
    prelude_text, separator, body = text.partition("\0" * 8)
    prelude = json.loads(prelude_text)
    status = int(prelude["statusCode"])
    headers = {k.lower(): str(v) for k, v in (prelude.get("headers") or {}).items()}
    event_stream = "text/event-stream" in headers.get("content-type", "")
    if separator and status == 200 and event_stream and "\nevent: done\n" not in f"\n{body}\n":
        return "200 without a done event"
    return status


# --- Forwarding the gateway's ports to 127.0.0.1 -----------------------------------------


def accepts(host, port):
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def pump(source, target):
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, target):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def forward(gateway, port):
    """Accepts on gateway:port and relays each connection to 127.0.0.1:port, in threads that
    end with this process."""
    listener = socket.create_server((gateway, port))

    def serve():
        while True:
            client, _ = listener.accept()
            try:
                upstream = socket.create_connection(("127.0.0.1", port), timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=pump, args=(upstream, client), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()


def open_ports(gateway, ports):
    for port in ports:
        if not accepts("127.0.0.1", port):
            raise Failure(f"nothing listens on 127.0.0.1:{port}: is the local stack up (make dev)?")
        if accepts(gateway, port):
            continue  # listens on every interface already (DynamoDB Local)
        forward(gateway, port)


def bridge_gateway():
    """The host's address on Docker's default bridge network: its gateway, which older
    engines leave out of `docker network inspect`; then the subnet's first address."""
    inspected = subprocess.run(
        ["docker", "network", "inspect", "bridge"], capture_output=True, text=True, check=False
    )
    try:
        config = json.loads(inspected.stdout)[0]["IPAM"]["Config"][0]
        return config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"]).hosts()))
    except (ValueError, LookupError, StopIteration) as e:
        raise Failure(f"Docker's bridge network has no address ({e}): is the engine up (make sam-local)?")


# --- Setting up a run ----------------------------------------------------------------------


class Run:
    def __init__(self, args):
        self.args = args
        self.build_dir = Path(args.build_dir)
        self.run_dir = Path(args.run_dir)
        self.work = self.run_dir / "sam"
        built = self.build_dir / "template.yaml"
        if not built.is_file():
            raise Failure(
                f"no {built}: `sam build` first (README, Deploy to AWS, step 1: "
                "export PATH=\"$PWD/.local/venv/bin:$PATH\" && sam build --beta-features)"
            )
        dev_env = self.run_dir / "dev.env"
        if not dev_env.is_file() or not (self.run_dir / "jwt-secret").is_file():
            raise Failure(f"no local stack ({dev_env} is missing): start it with make dev")
        self.template = parse_template(built)
        gateway = bridge_gateway()
        env, ports = for_containers(read_env_file(dev_env), gateway)
        open_ports(gateway, ports)
        self.work.mkdir(parents=True, exist_ok=True)
        self.local_template = self.work / "template.yaml"
        from samcli.yamlhelper import yaml_dump

        self.local_template.write_text(
            yaml_dump(local_template(self.template, self.build_dir, sorted(env))), encoding="utf-8"
        )
        self.env_file = self.work / "env.json"
        self.env_file.write_text(json.dumps({"Parameters": env}, indent=1), encoding="utf-8")
        self.functions = functions(self.template)
        self.token = dev_token.token(self.run_dir / "jwt-secret", f"sam-local-{int(time.time())}")

    def sam_args(self):
        return [
            "--template", str(self.local_template),
            "--env-vars", str(self.env_file),
            "--parameter-overrides", *PARAMETERS,
            "--invoke-image", self.args.image,
            "--skip-pull-image",
        ]

    def event_text(self, path):
        return Path(path).read_text(encoding="utf-8").replace("{{DEV_JWT}}", self.token)


def print_table(rows):
    header = ("function", "event", "expected", "got", "seconds")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def invoke_one(run, binary, logical_id, event):
    """One `sam local invoke`: (expected, got, seconds, log)."""
    expected = expected_result(event)
    resolved = run.work / f"event-{binary}-{event.name}"
    resolved.write_text(run.event_text(event), encoding="utf-8")
    log = run.work / f"invoke-{binary}-{event.stem}.log"
    started = time.monotonic()
    done = subprocess.run(
        [f"{sys.prefix}/bin/sam", "local", "invoke", logical_id, "--event", str(resolved), *run.sam_args()],
        capture_output=True, check=False, timeout=600,
    )
    seconds = time.monotonic() - started
    resolved.unlink()  # it holds a user token
    log.write_bytes(done.stderr + b"\n--- stdout ---\n" + done.stdout)
    try:
        got = status_of(binary, done.stdout)
    except (ValueError, KeyError, TypeError) as e:
        got = f"none ({e})"
        if b"No response from invoke container" in done.stderr:
            # Seen with an engine that runs the userland proxy (docs/sam-local.md).
            got = "none (No response from invoke container)"
    print(f"[sam-invoke] {binary}/{event.name}: expected {expected}, got {got} ({seconds:.1f} s)",
          file=sys.stderr, flush=True)
    return expected, got, seconds, log


def invoke(run):
    jobs = []
    for directory in sorted(p for p in (ROOT / "events").iterdir() if p.is_dir()):
        binary = directory.name
        logical_id = run.functions.get(binary)
        if not logical_id:
            raise Failure(f"events/{binary}/: no function of the template is built from the binary {binary}")
        jobs += [(binary, logical_id, event) for event in sorted(directory.glob("*.json"))]
    started = time.monotonic()
    # Two at a time: most of an invocation is SAM starting and a container being made, so
    # two keep both cores of a small machine busy.
    with ThreadPoolExecutor(max_workers=run.args.jobs) as pool:
        results = list(pool.map(lambda job: invoke_one(run, *job), jobs))
    rows, failed = [], []
    for (binary, _, event), (expected, got, seconds, log) in zip(jobs, results):
        rows.append((binary, event.name, expected, got, f"{seconds:.1f}"))
        if got != expected:
            failed.append((binary, event.name, expected, got, log))
    print_table(rows)
    print(f"[sam-invoke] {len(rows)} invocations in {time.monotonic() - started:.1f} s "
          f"({run.args.jobs} at a time)", file=sys.stderr)
    return failed


# --- start-api -------------------------------------------------------------------------------


def free_port(first):
    for port in range(first, first + 100):
        if not accepts("127.0.0.1", port):
            return port
    raise Failure(f"no free port from {first} on")


def route_request(run, method, path, binary):
    """The sample event of the function for this route whose status is most telling: a 200
    against the fakes if there is one, else the first. (path, headers, body, expected, name)."""
    candidates = []
    for event in sorted((ROOT / "events" / binary).glob("*.json")):
        data = json.loads(run.event_text(event))
        http = data.get("requestContext", {}).get("http", {})
        if http.get("method") == method and data.get("rawPath") == path:
            candidates.append((event, data))
    if not candidates:
        raise Failure(f"no sample event in events/{binary}/ for {method} {path}")
    event, data = next(((e, d) for e, d in candidates if expected_result(e) == 200), candidates[0])
    headers = {k: v for k, v in data.get("headers", {}).items() if k.lower() not in ("host", "content-length")}
    query = f"?{data['rawQueryString']}" if data.get("rawQueryString") else ""
    return path + query, headers, (data.get("body") or "").encode(), expected_result(event), event.name


def api(run):
    routes = http_routes(run.template)
    if not routes:
        raise Failure("the template has no HttpApi or Api routes")
    port = free_port(run.args.api_port)
    log_path = run.work / "start-api.log"
    log = open(log_path, "wb")
    started = time.monotonic()
    # Its own session, so stopping it stops everything it started.
    server = subprocess.Popen(
        [f"{sys.prefix}/bin/sam", "local", "start-api", "--host", "127.0.0.1", "--port", str(port),
         *run.sam_args()],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    print(f"[sam-api] sam local start-api on 127.0.0.1:{port} (pid {server.pid}, log {log_path})",
          file=sys.stderr, flush=True)
    rows, failed = [], []
    try:
        while not accepts("127.0.0.1", port):
            if server.poll() is not None:
                raise Failure(f"sam local start-api exited ({server.returncode}); see {log_path}")
            if time.monotonic() - started > 120:
                raise Failure(f"sam local start-api did not listen within 120 s; see {log_path}")
            time.sleep(0.5)
        by_id = {v: k for k, v in run.functions.items()}
        for method, path, logical_id in routes:
            binary = by_id.get(logical_id, logical_id)
            target, headers, body, expected, name = route_request(run, method, path, binary)
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}{target}", data=body or None, headers=headers, method=method
            )
            sent = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=300) as response:
                    got = response.status
            except urllib.error.HTTPError as e:
                got = e.code
            except OSError as e:
                got = f"none ({e})"
            seconds = time.monotonic() - sent
            rows.append((binary, f"{method} {path} ({name})", expected, got, f"{seconds:.1f}"))
            if got != expected:
                failed.append((binary, f"{method} {path} ({name})", expected, got, log_path))
            print(f"[sam-api] {method} {path} ({name}): expected {expected}, got {got} ({seconds:.1f} s)",
                  file=sys.stderr, flush=True)
    finally:
        stop(server)
        log.close()
    print_table(rows)
    print(f"[sam-api] start-api up and {len(rows)} routes checked in {time.monotonic() - started:.1f} s",
          file=sys.stderr)
    return failed


def stop(server):
    """Ctrl-C for start-api (it removes its containers then), SIGTERM after 20 s."""
    for sig, wait in ((signal.SIGINT, 20), (signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        if server.poll() is not None:
            break
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        try:
            server.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    print(f"[sam-api] start-api stopped (pid {server.pid})", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["invoke", "api", "routes"])
    ap.add_argument("--build-dir", default=str(ROOT / ".aws-sam" / "build"))
    ap.add_argument("--run-dir", default=str(ROOT / ".local" / "run"))
    ap.add_argument("--image", default="")
    ap.add_argument("--api-port", type=int, default=3100)
    ap.add_argument("--jobs", type=int, default=2, help="invocations at a time")
    args = ap.parse_args()
    try:
        if args.command == "routes":
            for method, path, logical_id in http_routes(parse_template(Path(args.build_dir) / "template.yaml")):
                print(method, path, logical_id)
            return 0
        if not args.image:
            raise Failure("no base image: run make sam-local first")
        run = Run(args)
        failed = invoke(run) if args.command == "invoke" else api(run)
    except Failure as e:
        print(f"[sam-local] error: {e}", file=sys.stderr)
        return 1
    if failed:
        for binary, name, expected, got, log in failed:
            print(f"[sam-local] MISMATCH {binary} {name}: expected {expected}, got {got} (log: {log})",
                  file=sys.stderr)
        print(f"[sam-local] {len(failed)} of the results above are not what was expected", file=sys.stderr)
        return 1
    print("[sam-local] every result as expected", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
