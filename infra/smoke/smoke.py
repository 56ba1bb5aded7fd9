#!/usr/bin/env python3
"""Smoke test of a running stack, from outside, with nothing but the Python standard library.

    infra/smoke/smoke.sh <chat-router base URL> <token> [<another user's token>]

The base URL is the chat-router's Function URL (deployed) or
http://127.0.0.1:9000/lambda-url/chat-router (`make dev`). The token is a bearer token the
stack accepts (a Cognito ID token, or a dev token locally). Checks:

- no token: 401 with the JSON error envelope;
- a flight search turn reaches `done` with `search_flights` succeeded and no `error` event;
- a knowledge-base turn (agent `support`) reaches `done` with `search_knowledge_base`
  succeeded;
- the audit route lists the flight search's call as succeeded;
- a chat that is not the caller's is 404: another user's chat when a second token is given,
  else a made-up chat id (missing and foreign look the same by design).

Exits 0 when everything holds, 1 with one line per failed check otherwise, 2 on bad usage.
It never prints a token.
"""

import datetime
import json
import sys
import urllib.error
import urllib.request
import uuid

TURN_TIMEOUT_SECS = 120


class Failed(Exception):
    """A check that did not hold; the message says which and why."""


def request(method, url, token=None, body=None, accept="application/json"):
    headers = {"accept": accept}
    if token:
        headers["authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["content-type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        return urllib.request.urlopen(req, timeout=TURN_TIMEOUT_SECS)
    except urllib.error.HTTPError as e:
        return e
    except (urllib.error.URLError, OSError) as e:
        raise Failed(f"cannot reach {method} {url}: {e}") from e


def json_of(response, what):
    text = response.read().decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError as e:
        raise Failed(f"{what}: not JSON ({response.status}): {text[:200]!r}") from e


def events(response):
    """The SSE events of a response, as (name, data) pairs, until the stream ends."""
    name, data = "message", []
    for raw in response:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    if data:
        yield name, json.loads("\n".join(data))


def turn(base, token, body, tool):
    """Runs one turn; returns its chat id. It must end with `done`, with `tool` succeeded."""
    what = f"turn {body['message']!r}"
    response = request("POST", f"{base}/chat", token, body, accept="text/event-stream")
    if response.status != 200:
        raise Failed(f"{what}: HTTP {response.status}: {response.read()[:300]!r}")
    chat_id, results, names = None, [], []
    for name, data in events(response):
        names.append(name)
        if name == "init":
            chat_id = data.get("chat_id")
        elif name == "tool_result":
            results.append((data.get("tool"), data.get("status")))
        elif name == "error":
            raise Failed(f"{what}: error event {data.get('code')}: {data.get('message')}")
    if not names or names[-1] != "done":
        raise Failed(f"{what}: the stream ended without done (events: {', '.join(names)})")
    if (tool, "succeeded") not in results:
        got = ", ".join(f"{t} {s}" for t, s in results) or "no tool call"
        raise Failed(f"{what}: expected {tool} succeeded, got {got}")
    if not chat_id:
        raise Failed(f"{what}: no chat id in init")
    return chat_id


def check_unauthorized(base):
    response = request("POST", f"{base}/chat", None, {"message": "hello"})
    envelope = json_of(response, "POST /chat without a token")
    code = envelope.get("error", {}).get("code") if isinstance(envelope, dict) else None
    if response.status != 401 or code != "unauthorized":
        raise Failed(f"POST /chat without a token: expected 401 unauthorized, got {response.status} {code}")


def check_audit(base, token, chat_id):
    response = request("GET", f"{base}/chats/{chat_id}/tool-calls", token)
    listing = json_of(response, "the audit route")
    if response.status != 200:
        raise Failed(f"GET /chats/{{id}}/tool-calls: HTTP {response.status}: {listing}")
    calls = [(c.get("tool"), c.get("status")) for c in listing.get("items", [])]
    if ("search_flights", "succeeded") not in calls:
        raise Failed(f"the audit route does not list the flight search as succeeded: {calls}")


def check_foreign(base, token, other_token, chat_id):
    if other_token:
        target, who = chat_id, "another user's chat"
        token = other_token
    else:
        target, who = uuid.uuid4().hex.upper()[:26], "a made-up chat id"
    response = request("GET", f"{base}/chats/{target}/tool-calls", token)
    if response.status != 404:
        raise Failed(f"{who}: expected 404, got {response.status}")


def main(argv):
    if len(argv) not in (3, 4) or not argv[1].startswith(("http://", "https://")):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    base, token = argv[1].rstrip("/"), argv[2]
    other = argv[3] if len(argv) == 4 else None
    date = (datetime.date.today() + datetime.timedelta(days=60)).isoformat()
    flight = {"message": f"Business class award flights from Frankfurt to New York on {date}"}
    kb = {"message": "How do Miles & More upgrades work?", "agent": "support"}
    failures, flight_chat = [], None
    checks = [
        ("no token is 401", lambda: check_unauthorized(base)),
        ("flight search turn", lambda: turn(base, token, flight, "search_flights")),
        ("knowledge-base turn", lambda: turn(base, token, kb, "search_knowledge_base")),
    ]
    for label, check in checks:
        try:
            result = check()
            if label == "flight search turn":
                flight_chat = result
            print(f"ok   {label}")
        except Failed as e:
            failures.append(str(e))
            print(f"FAIL {label}: {e}")
    if flight_chat:
        for label, check in [
            ("the audit route lists the call", lambda: check_audit(base, token, flight_chat)),
            ("a foreign chat is 404", lambda: check_foreign(base, token, other, flight_chat)),
        ]:
            try:
                check()
                print(f"ok   {label}")
            except Failed as e:
                failures.append(str(e))
                print(f"FAIL {label}: {e}")
    if failures:
        print(f"smoke test failed: {len(failures)} check(s)", file=sys.stderr)
        return 1
    print("smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
