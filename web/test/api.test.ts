// @vitest-environment node
import { afterEach, describe, expect, it, vi } from "vitest";
import { Api, TimedOut, withTimeout } from "../src/api";
import { loadConfig } from "../src/config";

const tokens = { token: () => "tok" };

/** A fetch that never answers; it records the signals it was given. */
function hangingFetch(signals: (AbortSignal | undefined)[]) {
  return vi.fn(async (_url: RequestInfo | URL, init?: RequestInit) => {
    signals.push(init?.signal ?? undefined);
    return new Promise<Response>(() => undefined); // heeds nothing
  });
}

afterEach(() => {
  vi.useRealTimers();
});

describe("plain calls' timeout", () => {
  it("gives up on a chat list that never comes, after requestMs, and aborts the request", async () => {
    vi.useFakeTimers();
    const signals: (AbortSignal | undefined)[] = [];
    const api = new Api("https://router.example", tokens, hangingFetch(signals) as typeof fetch, { firstByteMs: 30_000, requestMs: 20_000 });
    const outcome = api.listChats().catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(19_999);
    expect(signals[0]?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = await outcome;
    expect(error).toBeInstanceOf(TimedOut);
    expect((error as Error).message).toBe("No answer from the server within 20 seconds.");
    expect(signals[0]?.aborted).toBe(true);
  });

  it("covers the body too: headers then silence is no answer", async () => {
    vi.useFakeTimers();
    const body = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => undefined) });
    const fetchImpl = vi.fn(async () => new Response(body, { status: 200 }));
    const api = new Api("https://router.example", tokens, fetchImpl as typeof fetch, { firstByteMs: 30_000, requestMs: 5_000 });
    const outcome = api.messages("c1").catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await outcome).toBeInstanceOf(TimedOut);
  });

  it("leaves an answer in time alone", async () => {
    vi.useFakeTimers();
    const fetchImpl = vi.fn(async () => new Response(JSON.stringify({ items: [] })));
    const api = new Api("https://router.example", tokens, fetchImpl as typeof fetch);
    await expect(api.listChats()).resolves.toEqual({ items: [] });
    expect(vi.getTimerCount()).toBe(0); // its timer is gone
  });

  it("withTimeout passes an outer abort on", async () => {
    const outer = new AbortController();
    let inner: AbortSignal | undefined;
    const running = withTimeout(60_000, outer.signal, (signal) => {
      inner = signal;
      return new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("stopped"))));
    });
    outer.abort();
    await expect(running).rejects.toThrow("stopped");
    expect(inner?.aborted).toBe(true);
  });

  it("config.json that never comes is an error too, not a blank page", async () => {
    vi.useFakeTimers();
    const outcome = loadConfig(hangingFetch([]) as typeof fetch, "https://chat.example/", 20_000).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(await outcome).toBeInstanceOf(TimedOut);
  });
});
