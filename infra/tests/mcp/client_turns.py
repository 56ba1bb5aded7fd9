"""The other direction of MCP, through real chat turns against the local stack: the travel
profile lists the example external MCP server (infra/local/fare_notes_mcp.py, built with the
official Python SDK), and the offline stand-in model calls a tool a message names.

  python3 infra/tests/mcp/client_turns.py ROUTER_URL TOKEN CALLS_LOG

Checks, one line each (✓), exit 1 on the first that fails:
  - a call of fare_notes__lookup_fare_note succeeds and its note is the answer;
  - the identical call again in the same chat is deduplicated, and the server ran it once;
  - fare_notes__slow_note hangs: the call ends `timeout` and the turn still ends with `final`;
  - fare_notes__injected_note's text is flagged (`guard_tool_output`);
  - fare_notes__wipe_bookings, outside the allow-list, is never run on the server.
"""

import json
import sys
import urllib.request


def turn(router, token, body):
    request = urllib.request.Request(
        router.rstrip("/") + "/chat",
        data=json.dumps(body).encode(),
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
        method="POST",
    )
    events = []
    with urllib.request.urlopen(request, timeout=120) as response:
        name = None
        for raw in response:
            line = raw.decode("utf-8").rstrip("\n")
            if line.startswith("event:"):
                name = line[len("event:"):].strip()
            elif line.startswith("data:") and name:
                events.append((name, json.loads(line[len("data:"):].strip())))
                name = None
    return events


def first(events, name):
    return next((data for n, data in events if n == name), None)


def check(ok, what, detail):
    if not ok:
        print(f"✗ {what}: {detail}", file=sys.stderr)
        sys.exit(1)
    print(f"✓ {what}")


def calls(log, tool):
    try:
        with open(log, encoding="utf-8") as lines:
            return sum(1 for line in lines if line.split(" ", 1)[0] == tool)
    except FileNotFoundError:
        return 0


def main():
    router, token, log = sys.argv[1:4]
    route = '{"route": "FRA-JFK"}'
    before = calls(log, "lookup_fare_note")
    note = turn(router, token, {"message": f"Ask fare_notes__lookup_fare_note about {route}"})
    result = first(note, "tool_result") or {}
    final = first(note, "final") or {}
    check(
        result.get("status") == "succeeded"
        and result.get("metadata", {}).get("mcp_server") == "fare_notes"
        and "shoulder season" in json.dumps(final),
        "fare_notes__lookup_fare_note through a chat turn: succeeded, its note is the answer",
        f"{result} / {final}",
    )
    chat_id = (first(note, "init") or {}).get("chat_id")
    again = turn(router, token, {"message": f"Ask fare_notes__lookup_fare_note about {route}", "chat_id": chat_id})
    started = first(again, "tool_started") or {}
    check(
        started.get("deduped") is True and calls(log, "lookup_fare_note") == before + 1,
        "the identical call again is deduplicated; the server ran it once",
        f"{started}, server calls {calls(log, 'lookup_fare_note') - before}",
    )
    slow = turn(router, token, {"message": f"fare_notes__slow_note {route}"})
    check(
        (first(slow, "tool_result") or {}).get("status") == "timeout" and first(slow, "final") is not None,
        "fare_notes__slow_note hangs: the call times out, the turn ends with final",
        [n for n, _ in slow],
    )
    injected = turn(router, token, {"message": f"fare_notes__injected_note {route}", "debug": True})
    flagged = any(n == "debug" and d.get("type") == "guard_tool_output" for n, d in injected)
    check(flagged, "fare_notes__injected_note's text is flagged (guard_tool_output)", [n for n, _ in injected])
    wipe = turn(router, token, {"message": f"fare_notes__wipe_bookings {route}"})
    check(
        calls(log, "wipe_bookings") == 0 and first(wipe, "final") is not None,
        "fare_notes__wipe_bookings (outside the allow-list) never runs on the server",
        [n for n, _ in wipe],
    )


if __name__ == "__main__":
    main()
