"""The pure parts of infra/local/sam_local.py (`make sam-invoke`, `make sam-api`), without
Docker: which function each events/ directory belongs to, the expected result in each event's
name, the HTTP API routes of template.yaml, the configuration handed to the containers, the
copy of the template that declares it, and how an answer is read.

Run: .local/venv/bin/python infra/tests/sam_local_test.py (part of `make test`).
"""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "infra" / "local"))
import sam_local  # noqa: E402


def check(failures, condition, message):
    if not condition:
        failures.append(message)


def main():
    failures = []
    template = sam_local.parse_template(ROOT / "template.yaml")
    functions = sam_local.functions(template)

    # Every events/ directory names a function's binary; every event names its result.
    for directory in sorted(p for p in (ROOT / "events").iterdir() if p.is_dir()):
        check(failures, directory.name in functions, f"events/{directory.name}/ matches no function's binary")
        for event in directory.glob("*.json"):
            try:
                sam_local.expected_result(event)
            except sam_local.Failure as e:
                failures.append(str(e))
    check(failures, sam_local.expected_result("x/poison-in-batch-1.json") == 1, "poison-in-batch-1 is 1")
    check(failures, sam_local.expected_result("x/search-200.json") == 200, "search-200 is 200")

    # The routes start-api serves, each with a sample event to send.
    routes = sam_local.http_routes(template)
    check(failures, ("POST", "/internal/flights/award", "SeatsAeroSearchFunction") in routes, f"routes: {routes}")
    check(failures, len(routes) == 3, f"three HttpApi routes expected, got {routes}")

    # Configuration: loopback URLs point at the gateway, the issuer stays as it is.
    with tempfile.TemporaryDirectory() as tmp:
        env_file = Path(tmp) / "dev.env"
        env_file.write_text(
            "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8100\n"
            "TOOL_QUEUE_URL=http://127.0.0.1:5100/123456789012/ToolQueue\n"
            "JWT_ISSUER=http://127.0.0.1/dev\n"
            "STACK_NOTICE='local stack with fakes: a; b'\n"
            "AGENTS_FILE=.local/run/agents.toml\n"
        )
        env = sam_local.read_env_file(env_file)
    check(failures, env["STACK_NOTICE"] == "local stack with fakes: a; b", f"quotes: {env}")
    swapped, ports = sam_local.for_containers(env, "172.17.0.1")
    check(failures, ports == [5100, 8100], f"ports: {ports}")
    check(failures, swapped["AWS_ENDPOINT_URL_DYNAMODB"] == "http://172.17.0.1:8100", f"{swapped}")
    check(failures, swapped["TOOL_QUEUE_URL"].startswith("http://172.17.0.1:5100/"), f"{swapped}")
    check(failures, swapped["JWT_ISSUER"] == "http://127.0.0.1/dev", "the issuer is a name, not an address")
    check(failures, "AGENTS_FILE" not in swapped, "a file on this machine is not passed to a container")

    # The copy declares every name (SAM passes nothing else) and keeps the template's values.
    copy = sam_local.local_template(sam_local.parse_template(ROOT / "template.yaml"), "/build", sorted(swapped))
    declared = copy["Globals"]["Function"]["Environment"]["Variables"]
    check(failures, all(name in declared for name in swapped), f"not declared: {set(swapped) - set(declared)}")
    check(failures, declared["TOOL_QUEUE_URL"] == {"Ref": "ToolQueue"}, "a declared value is kept")
    code = copy["Resources"]["SeatsAeroSearchFunction"]["Properties"]["CodeUri"]
    check(failures, code == "/build", f"CodeUri made absolute: {code}")

    # Answers: an HTTP response, a streamed one, the worker's batch response.
    check(failures, sam_local.status_of("kb-retrieve", b'{"statusCode":400,"body":"{}"}\n') == 400, "plain")
    streamed = (b'{"statusCode":200,"headers":{"Content-Type":"text/event-stream"}}' + b"\0" * 8
                + b"event: init\ndata: {}\n\n")
    check(failures, sam_local.status_of("chat-router", streamed) != 200, "a stream without done is no 200")
    streamed += b"id: 1\nevent: done\ndata: {}\n\n"
    check(failures, sam_local.status_of("chat-router", streamed) == 200, "streamed")
    # A streaming function's JSON answer (mcp-server) has no events to end.
    json_stream = b'{"statusCode":200,"headers":{"content-type":"application/json"}}' + b"\0" * 8 + b"{}"
    check(failures, sam_local.status_of("mcp-server", json_stream) == 200, "a streamed JSON answer")
    batch = b'{"batchItemFailures":[{"itemIdentifier":"a"}]}'
    check(failures, sam_local.status_of("tool-worker", batch) == 1, "batch")

    if failures:
        sys.exit("sam local helpers:\n  " + "\n  ".join(failures))
    print(f"sam local helpers: {len(functions)} functions, {len(routes)} HTTP API routes, "
          "event names, configuration for containers, the declaring template copy, answers")


if __name__ == "__main__":
    main()
