// @vitest-environment node
import { describe, expect, it } from "vitest";
import { decodeEvent, eventId } from "../src/events";
import { SseParser, type SseMessage } from "../src/sse";

// A turn as the router frames it, with a comment, multi-byte text and a line end of each
// kind (the router sends LF; proxies and other servers may send CRLF or CR).
const STREAM =
  'id: 0\nevent: init\ndata: {"chat_id":"c1","created":true,"turn_id":"t1"}\n\n' +
  ": keep-alive\n\n" +
  'id: 1\r\nevent: assistant_token\r\ndata: {"content":"Grüße → ✈ 🛫"}\r\n\r\n' +
  'id: 2\revent: tool_started\rdata: {"tool":"search_flights","job_id":"tc_1","deduped":false,"status":"running"}\r\r' +
  'id: 12\nevent: done\ndata: {}\n\n';

const bytes = new TextEncoder().encode(STREAM);

function parseAll(chunks: Uint8Array[]): SseMessage[] {
  const parser = new SseParser();
  const out = chunks.flatMap((c) => parser.push(c));
  return [...out, ...parser.end()];
}

describe("SseParser", () => {
  const whole = parseAll([bytes]);

  it("parses a whole stream", () => {
    expect(whole.map((m) => m.event)).toEqual(["init", "assistant_token", "tool_started", "done"]);
    expect(whole.map((m) => m.id)).toEqual(["0", "1", "2", "12"]);
    expect(JSON.parse(whole[1].data).content).toBe("Grüße → ✈ 🛫");
  });

  it("gives the same events for a split at every byte boundary", () => {
    for (let split = 1; split < bytes.length; split++) {
      const events = parseAll([bytes.subarray(0, split), bytes.subarray(split)]);
      expect(events, `split at byte ${split}`).toEqual(whole);
    }
  });

  it("gives the same events for every pair of split points", () => {
    // Two splits: a CRLF or a 4-byte character cut in three pieces.
    for (let a = 1; a < bytes.length; a += 3) {
      for (let b = a + 1; b < bytes.length; b += 5) {
        const events = parseAll([bytes.subarray(0, a), bytes.subarray(a, b), bytes.subarray(b)]);
        expect(events, `splits at ${a} and ${b}`).toEqual(whole);
      }
    }
  });

  it("gives the same events byte by byte", () => {
    expect(parseAll(Array.from(bytes, (b) => Uint8Array.of(b)))).toEqual(whole);
  });

  it("joins data lines, strips one leading space, and ignores unknown fields", () => {
    const events = parseAll([new TextEncoder().encode("event: x\ndata:  two\ndata:three\nretry: 5\nfoo: bar\n\n")]);
    expect(events).toEqual([{ event: "x", data: " two\nthree", id: undefined }]);
  });

  it("names an event without `event:` message, and keeps ids per block", () => {
    const events = parseAll([new TextEncoder().encode("id: 7\ndata: 1\n\ndata: 2\n\nid\ndata: 3\n\n")]);
    expect(events.map((e) => [e.event, e.id])).toEqual([
      ["message", "7"],
      ["message", undefined],
      ["message", ""],
    ]);
  });

  it("drops an event whose blank line never came, and skips a byte-order mark split in two", () => {
    const events = parseAll([Uint8Array.of(0xef, 0xbb), Uint8Array.of(0xbf), new TextEncoder().encode("data: 1\n\ndata: 2\n")]);
    expect(events.map((e) => e.data)).toEqual(["1"]);
  });
});

describe("decodeEvent", () => {
  it("types the router's events and ignores unknown ones and bad data", () => {
    const decoded = whole().map(decodeEvent);
    expect(decoded.map((e) => e?.type)).toEqual(["init", "assistant_token", "tool_started", "done"]);
    expect(decoded[0]).toMatchObject({ id: 0, chat_id: "c1", turn_id: "t1", created: true });
    expect(decodeEvent({ event: "brand_new_event", data: "{}", id: "3" })).toBeNull();
    expect(decodeEvent({ event: "assistant_token", data: "not json", id: "3" })).toBeNull();
    expect(decodeEvent({ event: "init", data: '{"chat_id":1}', id: "0" })).toBeNull();
  });

  it("keeps an init's trace, with its viewer's page when the router names one", () => {
    const init = (trace: unknown) =>
      decodeEvent({ event: "init", id: "0", data: JSON.stringify({ chat_id: "c1", turn_id: "t1", created: true, trace }) });
    const id = "4bf92f3577b34da6a3ce929d0e0e4736";
    expect(init({ id, url: `http://127.0.0.1:6006/t/${id}` })).toMatchObject({ trace: { id, url: `http://127.0.0.1:6006/t/${id}` } });
    expect(init({ id })).toMatchObject({ trace: { id } });
    expect(init({ url: "x" })).not.toHaveProperty("trace");
  });

  it("reads ids as whole numbers only", () => {
    expect(eventId("12")).toBe(12);
    expect(eventId(undefined)).toBeUndefined();
    expect(eventId("x")).toBeUndefined();
    expect(eventId("-1")).toBeUndefined();
    expect(eventId("1.5")).toBeUndefined();
  });

  function whole() {
    return parseAll([bytes]);
  }
});
