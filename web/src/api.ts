// The chat-router's public HTTP contract (docs/api.md), and nothing else: every request
// carries the user's bearer token; every answer other than 2xx is read as the JSON error
// envelope `{"error": {code, message, details}}`. No call waits for ever: a plain call
// gives up after `requestMs`, a stream's request when no byte came within `firstByteMs`
// (src/stream.ts), both from config.json.

import type { components } from "./generated/api";

/** A fare alert with what it found (`GET /alerts`), as the OpenAPI document has it. */
export type FareAlert = components["schemas"]["FareAlert"];
export type AlertMatch = components["schemas"]["AlertMatch"];

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
    /** Seconds from a `Retry-After` header (429). */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** How long the page waits, in milliseconds: for the first byte of a turn's stream (a stream
 * that has begun is not cut), and for the whole of any other call. */
export interface TimeLimits {
  firstByteMs: number;
  requestMs: number;
}

export const DEFAULT_TIMEOUTS: Readonly<TimeLimits> = { firstByteMs: 30_000, requestMs: 20_000 };

/** The server did not answer in time; what was asked may still be happening there. */
export class TimedOut extends Error {
  constructor(readonly ms: number) {
    super(`No answer from the server within ${+(ms / 1000).toFixed(2)} seconds.`);
    this.name = "TimedOut";
  }
}

/** Runs `work` with a signal that aborts after `ms` (or with `signal`); past `ms` it
 * rejects with TimedOut, whether or not the work heeds its signal. */
export async function withTimeout<T>(
  ms: number,
  signal: AbortSignal | undefined,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const forward = () => controller.abort();
  if (signal?.aborted) forward();
  signal?.addEventListener("abort", forward, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new TimedOut(ms));
    }, ms);
  });
  try {
    return await Promise.race([work(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", forward);
  }
}

/** Where the bearer token comes from. `refresh` (the local stack's page only) gets a new
 * one after a 401, e.g. when the minted dev token expired. */
export interface TokenSource {
  token(): string | null;
  refresh?(): Promise<boolean>;
}

export interface ChatSummary {
  chat_id: string;
  title?: string | null;
  message_count: number;
  created_at: string;
  active_at: string;
}

export interface MessageToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface UiElement {
  kind: string;
  payload: unknown;
}

export interface StoredMessage {
  id: string;
  chat_id: string;
  seq: number;
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  created_at: string;
  tool_calls?: MessageToolCall[];
  tool_call_id?: string | null;
  ledger_call_id?: string | null;
  ui?: UiElement[];
  /** An answer the user stopped: what the assistant had said until then. */
  stopped?: boolean;
  /** An answer: the language of its turn (`en`, `de`). */
  language?: string;
}

export interface ToolCallRecord {
  id: string;
  chat_id: string;
  tool: string;
  status: string;
  attempt: number;
  request: unknown;
  response?: {
    status?: string;
    message?: string;
    raw?: unknown;
    metadata?: Record<string, unknown>;
  } | null;
  error?: string | null;
  created_at: string;
  updated_at: string;
  started_at?: string | null;
  finished_at?: string | null;
  approval?: { summary: string; expires_at: string; decision?: string | null; reason?: string | null } | null;
}

export interface Page<T> {
  items: T[];
  next_cursor?: string | null;
}

export interface ChatBody {
  message: string;
  chat_id?: string;
  agent?: string;
  timezone?: string;
  language?: string;
}

type Fetch = typeof fetch;

export class Api {
  private readonly base: string;

  constructor(
    base: string,
    private readonly auth: TokenSource,
    private readonly fetchImpl: Fetch = (...args) => fetch(...args),
    readonly timeouts: Readonly<TimeLimits> = DEFAULT_TIMEOUTS,
  ) {
    this.base = base.replace(/\/+$/, "");
  }

  /** `{base}/{segments}` with each segment (ids from the server) percent-encoded. */
  url(segments: string[], query: Record<string, string | number | undefined> = {}): string {
    const path = segments.map(encodeURIComponent).join("/");
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const q = params.toString();
    return `${this.base}/${path}${q ? `?${q}` : ""}`;
  }

  /** A request with the bearer token; after a 401 the token is refreshed once, if it can
   * be. Resolves with any status; the callers decide what is an error. */
  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const send = () => {
      const headers = new Headers(init.headers);
      const token = this.auth.token();
      if (token) headers.set("authorization", `Bearer ${token}`);
      return this.fetchImpl(url, { ...init, headers });
    };
    const response = await send();
    if (response.status === 401 && this.auth.refresh && (await this.auth.refresh())) {
      return send();
    }
    return response;
  }

  /** A plain call: its answer, read whole within `timeouts.requestMs`. */
  private json<T>(method: string, segments: string[], query = {}, body?: unknown): Promise<T> {
    return withTimeout(this.timeouts.requestMs, undefined, async (signal) => {
      const init: RequestInit = { method, headers: { accept: "application/json" }, signal };
      if (body !== undefined) {
        init.headers = { ...init.headers, "content-type": "application/json" };
        init.body = JSON.stringify(body);
      }
      const response = await this.request(this.url(segments, query), init);
      if (!response.ok) throw await readError(response);
      if (response.status === 204) return undefined as T;
      return (await response.json()) as T;
    });
  }

  listChats(cursor?: string): Promise<Page<ChatSummary>> {
    return this.json("GET", ["chats"], { limit: 50, cursor });
  }

  /** One page of the chat's messages, newest first. */
  messages(chatId: string, cursor?: string): Promise<Page<StoredMessage>> {
    return this.json("GET", ["chats", chatId, "messages"], { limit: 100, cursor });
  }

  toolCalls(chatId: string, cursor?: string): Promise<Page<ToolCallRecord>> {
    return this.json("GET", ["chats", chatId, "tool-calls"], { limit: 100, cursor });
  }

  toolCall(chatId: string, callId: string): Promise<ToolCallRecord> {
    return this.json("GET", ["chats", chatId, "tool-calls", callId]);
  }

  cancelTurn(chatId: string, turnId: string): Promise<{ status: string; cancel_requested: boolean }> {
    return this.json("POST", ["chats", chatId, "turns", turnId, "cancel"]);
  }

  renameChat(chatId: string, title: string): Promise<void> {
    return this.json("PATCH", ["chats", chatId], {}, { title });
  }

  deleteChat(chatId: string): Promise<void> {
    return this.json("DELETE", ["chats", chatId]);
  }

  /** `GET /alerts`: the user's fare alerts, oldest first, each with its matches. */
  listAlerts(): Promise<components["schemas"]["AlertList"]> {
    return this.json("GET", ["alerts"]);
  }

  /** `DELETE /alerts/{alert_id}`. */
  deleteAlert(alertId: string): Promise<void> {
    return this.json("DELETE", ["alerts", alertId]);
  }

  /** `POST /chat`: the stream's response, whatever its status. */
  postChat(body: ChatBody, idempotencyKey: string, signal?: AbortSignal): Promise<Response> {
    return this.request(this.url(["chat"]), {
      method: "POST",
      headers: {
        accept: "text/event-stream",
        "content-type": "application/json",
        "idempotency-key": idempotencyKey,
      },
      body: JSON.stringify(body),
      signal,
    });
  }

  /** `POST /chats/{chat_id}/tool-calls/{job_id}/approve|deny`: the continuation's stream. */
  decide(
    chatId: string,
    jobId: string,
    decision: "approve" | "deny",
    reason?: string,
    signal?: AbortSignal,
  ): Promise<Response> {
    return this.request(this.url(["chats", chatId, "tool-calls", jobId, decision]), {
      method: "POST",
      headers: { accept: "text/event-stream", "content-type": "application/json" },
      body: JSON.stringify(decision === "deny" && reason ? { reason } : {}),
      signal,
    });
  }

  /** `GET /chats/{chat_id}/turns/{turn_id}/events` after event `after` (from `init`
   * without it). `?after=` rather than `Last-Event-ID`: a query parameter needs no CORS
   * preflight permission. */
  resume(chatId: string, turnId: string, after: number | undefined, signal?: AbortSignal): Promise<Response> {
    return this.request(this.url(["chats", chatId, "turns", turnId, "events"], { after }), {
      headers: { accept: "text/event-stream" },
      signal,
    });
  }
}

/** The error envelope of a non-2xx answer; a body that is not one (a proxy's page) still
 * becomes an ApiError with the status. */
export async function readError(response: Response): Promise<ApiError> {
  let text = "";
  try {
    text = await response.text();
  } catch {
    // the body broke off: the status says enough
  }
  const retryAfter = Number(response.headers.get("retry-after") ?? NaN);
  try {
    const envelope = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    const e = envelope.error;
    if (e && typeof e.code === "string") {
      return new ApiError(
        response.status,
        e.code,
        typeof e.message === "string" ? e.message : e.code,
        typeof e.details === "object" && e.details !== null ? (e.details as Record<string, unknown>) : undefined,
        Number.isFinite(retryAfter) ? retryAfter : undefined,
      );
    }
  } catch {
    // not JSON
  }
  const code = response.status >= 500 ? "upstream_error" : "http_error";
  return new ApiError(response.status, code, `HTTP ${response.status}`, undefined, undefined);
}
