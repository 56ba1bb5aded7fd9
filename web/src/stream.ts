// Reads one turn's event stream to its `done`, surviving a bad network the way
// docs/api.md ("A client that survives a bad network") asks:
//
// - the first request is `POST /chat` with an Idempotency-Key (or a decision's POST);
// - when the stream breaks after `init`, the rest comes from
//   `GET /chats/{chat_id}/turns/{turn_id}/events?after=<last id>`: no gap, no duplicate;
// - when it breaks before `init`, the same POST is sent again with the same key (the router
//   answers with that turn's events from `init`); a decision's POST is never sent twice;
// - an answer other than 2xx is never retried: it is an ApiError for the caller;
// - a request that brings no byte within `firstByteMs` (the server hangs) is given up:
//   TimedOut for the caller, who may ask again for the same turn. A stream that has begun
//   is not cut by it.
//
// Aborting (the signal) only stops reading: the turn runs on at the router (stopping it is
// the explicit cancel route).

import { ApiError, readError, TimedOut } from "./api";
import { decodeEvent, type RouterEvent } from "./events";
import { SseParser } from "./sse";

export class StreamBroken extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StreamBroken";
  }
}

export interface StreamOptions {
  /** Sends the request that starts the stream (again, for a resend). */
  start: (signal: AbortSignal) => Promise<Response>;
  /** The start may be sent again (POST /chat with its Idempotency-Key). */
  resendable: boolean;
  resume: (chatId: string, turnId: string, after: number, signal: AbortSignal) => Promise<Response>;
  onEvent: (event: RouterEvent) => void;
  /** Told before each retry: what broke and what comes next. */
  onRetry?: (attempt: number, what: "resend" | "resume") => void;
  signal?: AbortSignal;
  maxRetries?: number;
  /** Pause before retry `attempt` (1, 2, …). */
  retryDelay?: (attempt: number) => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** How long each request (the start, a resend, a resume) may take to its first byte;
   * none when absent. */
  firstByteMs?: number;
}

export type StreamEnd = "done" | "aborted";

export const MAX_RETRIES = 3;
const defaultDelay = (attempt: number) => 500 * 2 ** (attempt - 1);

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/** How far the turn has been shown: enough to resume it. */
class Progress {
  chatId?: string;
  turnId?: string;
  lastId?: number;
  shown = false;

  resumePoint(): [string, string, number] | null {
    return this.chatId !== undefined && this.turnId !== undefined && this.lastId !== undefined
      ? [this.chatId, this.turnId, this.lastId]
      : null;
  }

  canContinue(resendable: boolean): boolean {
    return this.resumePoint() !== null || (resendable && !this.shown);
  }

  /** Whether the event is new (a resend replays from `init`); records it if so. */
  take(event: RouterEvent): boolean {
    if (event.id !== undefined && this.lastId !== undefined && event.id <= this.lastId) return false;
    if (event.id !== undefined) this.lastId = event.id;
    if (event.type === "init") {
      this.chatId = event.chat_id;
      this.turnId = event.turn_id;
    }
    this.shown = true;
    return true;
  }
}

export async function streamTurn(options: StreamOptions): Promise<StreamEnd> {
  const signal = options.signal ?? new AbortController().signal;
  const maxRetries = options.maxRetries ?? MAX_RETRIES;
  const delay = options.retryDelay ?? defaultDelay;
  const sleep = options.sleep ?? defaultSleep;
  const progress = new Progress();
  let retries = 0;
  for (;;) {
    if (signal.aborted) return "aborted";
    let broken: Error;
    // This request's own signal: the caller's, or the first-byte timer's.
    const request = new AbortController();
    const forward = () => request.abort();
    signal.addEventListener("abort", forward, { once: true });
    let expired = false;
    const timer =
      options.firstByteMs === undefined
        ? undefined
        : setTimeout(() => {
            expired = true;
            request.abort();
          }, options.firstByteMs);
    const begun = () => clearTimeout(timer);
    try {
      const point = progress.resumePoint();
      const response = await untilAborted(
        point ? options.resume(point[0], point[1], point[2], request.signal) : options.start(request.signal),
        request.signal,
      );
      if (!response.ok) {
        begun(); // an answer, if not the one hoped for
        throw await readError(response);
      }
      if (await read(response, progress, options.onEvent, request.signal, begun)) return "done";
      if (signal.aborted) return "aborted";
      if (expired) throw new TimedOut(options.firstByteMs!);
      broken = new StreamBroken("the stream ended before the turn's done");
    } catch (error) {
      if (signal.aborted) return "aborted";
      if (expired) throw new TimedOut(options.firstByteMs!);
      if (error instanceof ApiError || error instanceof TimedOut) throw error;
      broken = error instanceof Error ? error : new StreamBroken(String(error));
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", forward);
    }
    if (retries >= maxRetries || !progress.canContinue(options.resendable)) {
      throw broken instanceof StreamBroken ? broken : new StreamBroken(`connection lost: ${broken.message}`);
    }
    retries += 1;
    options.onRetry?.(retries, progress.resumePoint() ? "resume" : "resend");
    await sleep(delay(retries), signal);
  }
}

/** The promise, or a rejection as soon as the signal aborts (a request that does not heed
 * its signal is not waited for either). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new StreamBroken("aborted"));
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(new StreamBroken("aborted"));
    signal.addEventListener("abort", stop, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", stop));
  });
}

/** Reads one response's events until `done` (true) or until the body ends or breaks
 * (false, or the read's error). A fresh parser per response: half an event before the
 * break is dropped and comes again whole with the resume. `begun` is told of the first
 * bytes. */
async function read(
  response: Response,
  progress: Progress,
  onEvent: (event: RouterEvent) => void,
  signal: AbortSignal,
  begun: () => void,
): Promise<boolean> {
  if (!response.body) return false;
  const reader = response.body.getReader();
  const parser = new SseParser();
  const stop = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", stop, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (!done && value.length) begun();
      const messages = done ? parser.end() : parser.push(value);
      for (const message of messages) {
        const event = decodeEvent(message);
        if (!event || !progress.take(event)) continue;
        onEvent(event);
        if (event.type === "done") {
          stop();
          return true;
        }
      }
      if (done) return false;
    }
  } finally {
    signal.removeEventListener("abort", stop);
  }
}
