// @vitest-environment node
import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError, TimedOut } from "../src/api";
import type { RouterEvent } from "../src/events";
import { StreamBroken, streamTurn, type StreamOptions } from "../src/stream";

const frame = (id: number | null, event: string, data: unknown) =>
  `${id === null ? "" : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

const TURN = [
  frame(0, "init", { chat_id: "c1", created: true, turn_id: "t1" }),
  frame(1, "assistant_token", { content: "Hello" }),
  frame(2, "assistant_token", { content: " world" }),
  frame(3, "final", { message: { role: "assistant", content: "Hello world" }, session_state: {}, tool_result: null }),
  frame(4, "done", {}),
];

/** A streaming response: each part is one chunk; `breakWith` ends the body with an error
 * (a dropped connection) instead of closing it; `cut` cuts the last chunk in half. */
function sse(parts: string[], opts: { breakWith?: Error; status?: number } = {}): Response {
  const encoder = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < parts.length) {
        controller.enqueue(encoder.encode(parts[i++]));
      } else if (opts.breakWith) {
        controller.error(opts.breakWith);
      } else {
        controller.close();
      }
    },
  });
  return new Response(body, { status: opts.status ?? 200, headers: { "content-type": "text/event-stream" } });
}

function run(options: Partial<StreamOptions> & Pick<StreamOptions, "start">) {
  const events: RouterEvent[] = [];
  const resume = options.resume ?? vi.fn(async () => sse([]));
  const promise = streamTurn({
    resendable: true,
    resume,
    onEvent: (e) => events.push(e),
    sleep: async () => undefined,
    ...options,
  });
  return { events, promise, resume };
}

const ids = (events: RouterEvent[]) => events.map((e) => e.id);

describe("streamTurn", () => {
  it("reads a whole turn to done", async () => {
    const { events, promise } = run({ start: async () => sse(TURN) });
    await expect(promise).resolves.toBe("done");
    expect(events.map((e) => e.type)).toEqual(["init", "assistant_token", "assistant_token", "final", "done"]);
  });

  it("resumes after the last event when the stream ends early, without gap or duplicate", async () => {
    // The connection drops mid-frame: half of event 2 arrived; the resume sends 2 again.
    const half = TURN[2].slice(0, 20);
    const resume = vi.fn(async (_c: string, _t: string, after: number) => sse(TURN.slice(after + 1)));
    const { events, promise } = run({ start: async () => sse([TURN[0], TURN[1], half]), resume });
    await expect(promise).resolves.toBe("done");
    expect(resume).toHaveBeenCalledTimes(1);
    expect(resume.mock.calls[0].slice(0, 3)).toEqual(["c1", "t1", 1]);
    expect(ids(events)).toEqual([0, 1, 2, 3, 4]);
  });

  it("resumes after a network error inside the body, and skips replayed events", async () => {
    const resume = vi.fn(async () => sse(TURN)); // a server that replays too much
    const { events, promise } = run({
      start: async () => sse(TURN.slice(0, 3), { breakWith: new TypeError("network error") }),
      resume,
    });
    await expect(promise).resolves.toBe("done");
    expect(ids(events)).toEqual([0, 1, 2, 3, 4]);
  });

  it("sends the POST again (same request) when nothing came before the break", async () => {
    const start = vi
      .fn<StreamOptions["start"]>()
      .mockRejectedValueOnce(new TypeError("Failed to fetch"))
      .mockResolvedValueOnce(sse(TURN));
    const retries: string[] = [];
    const { events, promise, resume } = run({ start, onRetry: (_n, what) => retries.push(what) });
    await expect(promise).resolves.toBe("done");
    expect(start).toHaveBeenCalledTimes(2);
    expect(resume).not.toHaveBeenCalled();
    expect(retries).toEqual(["resend"]);
    expect(ids(events)).toEqual([0, 1, 2, 3, 4]);
  });

  it("never sends a decision's POST twice", async () => {
    const start = vi.fn(async () => {
      throw new TypeError("Failed to fetch");
    });
    const { promise } = run({ start, resendable: false });
    await expect(promise).rejects.toBeInstanceOf(StreamBroken);
    expect(start).toHaveBeenCalledTimes(1);
  });

  it("turns a JSON error into an ApiError and does not retry it", async () => {
    const body = JSON.stringify({ error: { code: "turn_in_progress", message: "busy", details: { turn_id: "t0" } } });
    const start = vi.fn(async () => new Response(body, { status: 409, headers: { "content-type": "application/json" } }));
    const { promise } = run({ start });
    const error = await promise.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 409, code: "turn_in_progress", details: { turn_id: "t0" } });
    expect(start).toHaveBeenCalledTimes(1);
  });

  it("gives up after the retries", async () => {
    const resume = vi.fn(async () => sse([], { breakWith: new TypeError("network error") }));
    const delays: number[] = [];
    const { promise } = run({
      start: async () => sse(TURN.slice(0, 2)),
      resume,
      retryDelay: (n) => {
        delays.push(n);
        return 0;
      },
    });
    await expect(promise).rejects.toBeInstanceOf(StreamBroken);
    expect(resume).toHaveBeenCalledTimes(3);
    expect(delays).toEqual([1, 2, 3]);
  });

  it("stops reading when aborted, without a retry (the turn goes on at the router)", async () => {
    const controller = new AbortController();
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(TURN[0] + TURN[1]));
      },
      cancel() {
        cancelled = true;
      },
    });
    const events: RouterEvent[] = [];
    const resume = vi.fn();
    const promise = streamTurn({
      start: async () => new Response(body),
      resendable: true,
      resume,
      signal: controller.signal,
      onEvent: (e) => {
        events.push(e);
        if (e.type === "assistant_token") controller.abort();
      },
    });
    await expect(promise).resolves.toBe("aborted");
    expect(cancelled).toBe(true);
    expect(resume).not.toHaveBeenCalled();
    expect(events.map((e) => e.type)).toEqual(["init", "assistant_token"]);
  });

  it("ignores unknown events in the stream", async () => {
    const parts = [TURN[0], frame(1, "something_new", { x: 1 }), ": comment\n\n", ...TURN.slice(1).map((f) => f.replace(/id: (\d)/, (_m, d) => `id: ${Number(d) + 1}`))];
    const { events, promise } = run({ start: async () => sse(parts) });
    await expect(promise).resolves.toBe("done");
    expect(events.map((e) => e.type)).toEqual(["init", "assistant_token", "assistant_token", "final", "done"]);
  });
});

/** A response whose body sends `parts[i]` after `delays[i]` ms (fake timers advance them),
 * then closes. */
function slowSse(parts: string[], delays: number[]): Response {
  const encoder = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (i >= parts.length) return controller.close();
      await new Promise((r) => setTimeout(r, delays[i]));
      controller.enqueue(encoder.encode(parts[i++]));
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

/** A request that never answers; it records the signal it was given. */
function hanging(signals: AbortSignal[], heed = true) {
  return vi.fn(
    (signal: AbortSignal) =>
      new Promise<Response>((_resolve, reject) => {
        signals.push(signal);
        if (heed) signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
      }),
  );
}

describe("streamTurn's first-byte timeout", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each([true, false])("gives up on a server that never answers (request heeds its signal: %s), without a resend", async (heed) => {
    vi.useFakeTimers();
    const signals: AbortSignal[] = [];
    const start = hanging(signals, heed);
    const { promise } = run({ start, firstByteMs: 30_000 });
    const outcome = promise.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(29_999);
    expect(signals[0].aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = await outcome;
    expect(error).toBeInstanceOf(TimedOut);
    expect((error as Error).message).toBe("No answer from the server within 30 seconds.");
    expect(start).toHaveBeenCalledTimes(1);
    expect(signals[0].aborted).toBe(true); // the request itself is given up too
  });

  it("gives up on headers with no body byte after them", async () => {
    vi.useFakeTimers();
    const { promise } = run({ start: async () => slowSse([TURN[0]], [3_600_000]), firstByteMs: 30_000 });
    const outcome = promise.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(await outcome).toBeInstanceOf(TimedOut);
  });

  it("does not cut a stream that has begun, however slow", async () => {
    vi.useFakeTimers();
    const start = vi.fn(async () => slowSse(TURN, [10, 60_000, 60_000, 60_000, 60_000]));
    const { promise, events } = run({ start, firstByteMs: 30_000 });
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    await expect(promise).resolves.toBe("done");
    expect(ids(events)).toEqual([0, 1, 2, 3, 4]);
    expect(start).toHaveBeenCalledTimes(1);
  });

  it("times each request: a resume that never answers gives up too", async () => {
    vi.useFakeTimers();
    const signals: AbortSignal[] = [];
    const resume = hanging(signals);
    const { promise, events } = run({
      start: async () => sse(TURN.slice(0, 2)), // breaks after event 1
      resume: (_c, _t, _after, signal) => resume(signal),
      firstByteMs: 1_000,
    });
    const outcome = promise.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await outcome).toBeInstanceOf(TimedOut);
    expect(ids(events)).toEqual([0, 1]);
    expect(resume).toHaveBeenCalledTimes(1);
  });

  it("an abort while waiting is an abort, not a timeout", async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const { promise } = run({ start: hanging([]), firstByteMs: 30_000, signal: controller.signal });
    await vi.advanceTimersByTimeAsync(1_000);
    controller.abort();
    await expect(promise).resolves.toBe("aborted");
  });

  it("a JSON error is an answer: no timeout while its body is read", async () => {
    vi.useFakeTimers();
    const body = JSON.stringify({ error: { code: "rate_limited", message: "slow down" } });
    const { promise } = run({ start: async () => new Response(body, { status: 429 }), firstByteMs: 30_000 });
    await expect(promise).rejects.toMatchObject({ code: "rate_limited" });
  });
});
