"""The smoke test (infra/smoke/smoke.py) against fake routers: it passes a healthy stack and
fails, non-zero and naming the check, when a tool function is down, the router is
unreachable or the audit route breaks.

    python3 infra/tests/smoke_selftest.py
"""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SMOKE = os.path.join(os.path.dirname(__file__), "..", "smoke", "smoke.sh")
CHATS = {"good": "01CHATOFUSERA0000000000000", "other": "01CHATOFUSERB0000000000000"}


def fake_router(flight_status="succeeded", audit_status=200):
    """A router whose flight search ends `flight_status` and whose audit route answers
    `audit_status`; tokens are `good` and `other` (two users)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def user(self):
            auth = self.headers.get("authorization", "")
            return auth.removeprefix("Bearer ") or None

        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            if not self.user():
                return self.reply(401, {"error": {"code": "unauthorized", "message": "missing bearer token"}})
            kb = body.get("agent") == "support"
            tool = "search_knowledge_base" if kb else "search_flights"
            status = "succeeded" if kb else flight_status
            events = [
                ("init", {"chat_id": CHATS[self.user()], "created": True, "turn_id": "t"}),
                ("tool_result", {"tool": tool, "status": status}),
                ("final", {"message": {"content": "ok"}}),
                ("done", {}),
            ]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for i, (name, data) in enumerate(events):
                self.wfile.write(f"id: {i}\nevent: {name}\ndata: {json.dumps(data)}\n\n".encode())

        def do_GET(self):
            chat = self.path.split("/")[-2]
            if chat != CHATS.get(self.user()):
                return self.reply(404, {"error": {"code": "not_found", "message": "not found"}})
            if audit_status != 200:
                return self.reply(audit_status, {"error": {"code": "internal", "message": "internal error"}})
            self.reply(200, {"items": [{"tool": "search_flights", "status": "succeeded"}]})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def smoke(base, *tokens):
    run = subprocess.run([SMOKE, base, *tokens], capture_output=True, text=True, timeout=60)
    return run.returncode, run.stdout + run.stderr


def main():
    failures = []

    def expect(label, condition, output):
        print(("ok   " if condition else "FAIL ") + label)
        if not condition:
            failures.append(label)
            print(output)

    healthy = fake_router()
    base = f"http://127.0.0.1:{healthy.server_address[1]}"
    code, out = smoke(base, "good", "other")
    expect("a healthy stack passes", code == 0 and "smoke test passed" in out, out)
    code, out = smoke(base, "good")
    expect("a healthy stack passes with one token", code == 0, out)

    down = fake_router(flight_status="failed")
    code, out = smoke(f"http://127.0.0.1:{down.server_address[1]}", "good", "other")
    expect(
        "a flight function that is down fails the run and is named",
        code == 1 and "expected search_flights succeeded, got search_flights failed" in out,
        out,
    )

    broken = fake_router(audit_status=500)
    code, out = smoke(f"http://127.0.0.1:{broken.server_address[1]}", "good", "other")
    expect("a broken audit route fails the run", code == 1 and "FAIL the audit route" in out, out)

    healthy.shutdown()
    healthy.server_close()
    code, out = smoke(base, "good")
    expect("an unreachable router fails the run", code == 1 and "cannot reach" in out, out)

    code, out = smoke("not-a-url", "good")
    expect("bad usage is 2", code == 2, out)

    if failures:
        print(f"smoke self-test: {len(failures)} failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
