// The chat-router's SSE events (docs/api.md#event-stream), typed as the client reads them.
// The types come from the OpenAPI document (`npm run types` generates src/generated/api.ts
// from docs/openapi.json, which the router's Rust types generate): a field renamed or
// removed there fails this build. Unknown events and unknown fields are ignored, so a newer
// router does not break an older page.

import type { components } from "./generated/api";
import type { SseMessage } from "./sse";

type Schemas = components["schemas"];
/** An event as the router serialises it: `{event, data}`. */
type WireEvent = Schemas["TurnEvent"];
type Name = WireEvent["event"];
type DataOf<N extends Name> = Extract<WireEvent, { event: N }>["data"];
/** An event as the page reads it: its data, its name as `type`, its place in the turn. */
type Flat<N extends Name> = { type: N; id?: number } & DataOf<N>;

export type CallStatus = Schemas["CallStatus"];
export type ApprovalRequest = DataOf<"approval_required">;

export type RouterEvent =
  // An `init` replayed from the turn's record has no language.
  | (Omit<Flat<"init">, "language"> & Partial<Pick<DataOf<"init">, "language">>)
  | Flat<"tool_started">
  | Flat<"tool_progress">
  | Flat<"tool_result">
  | Flat<"assistant_token">
  | Flat<"handoff">
  // A newer router may send a kind this page does not know; it shows nothing for it.
  | (Omit<Flat<"ui">, "kind"> & { kind: DataOf<"ui">["kind"] | (string & {}) })
  | Flat<"approval_required">
  | Flat<"final">
  | Flat<"error">
  // `debug`'s own `type` field is read as `kind`: `type` names the event here.
  | ({ type: "debug"; id?: number; kind: DataOf<"debug">["type"] } & Omit<DataOf<"debug">, "type">)
  // `done` has no data.
  | { type: "done"; id?: number };

export type EventType = RouterEvent["type"];

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === "string";

/** The event's place in its turn: a whole number, or undefined (events outside the turn's
 * log, such as a refusal replayed to a follower, have none). */
export function eventId(raw: string | undefined): number | undefined {
  if (raw === undefined || !/^\d{1,15}$/.test(raw)) return undefined;
  return Number(raw);
}

/** One parsed SSE message as a router event; `null` for unknown events and for data that
 * does not have the event's required fields. */
export function decodeEvent(message: SseMessage): RouterEvent | null {
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    return null;
  }
  if (!isObject(data)) return null;
  const id = eventId(message.id);
  const d = data;
  switch (message.event) {
    case "init":
      return str(d.chat_id) && str(d.turn_id)
        ? {
            type: "init",
            id,
            chat_id: d.chat_id,
            turn_id: d.turn_id,
            created: d.created === true,
            ...(str(d.language) ? { language: d.language as DataOf<"init">["language"] } : {}),
            ...(isObject(d.trace) && str(d.trace.id)
              ? { trace: { id: d.trace.id, ...(str(d.trace.url) ? { url: d.trace.url } : {}) } }
              : {}),
          }
        : null;
    case "tool_started":
      return str(d.tool) && str(d.job_id)
        ? {
            type: "tool_started",
            id,
            tool: d.tool,
            job_id: d.job_id,
            deduped: d.deduped === true,
            status: d.status === "queued" ? "queued" : "running",
          }
        : null;
    case "tool_progress":
      return str(d.tool) && str(d.job_id) && str(d.message)
        ? { type: "tool_progress", id, tool: d.tool, job_id: d.job_id, message: d.message }
        : null;
    case "tool_result":
      return str(d.tool) && str(d.status)
        ? {
            type: "tool_result",
            id,
            tool: d.tool,
            job_id: str(d.job_id) ? d.job_id : null,
            status: d.status as CallStatus,
            metadata: isObject(d.metadata) ? d.metadata : {},
            result: d.result,
          }
        : null;
    case "assistant_token":
      return str(d.content) ? { type: "assistant_token", id, content: d.content } : null;
    case "handoff":
      return str(d.from) && str(d.to)
        ? { type: "handoff", id, from: d.from, to: d.to, reason: str(d.reason) ? d.reason : "" }
        : null;
    case "ui":
      return str(d.kind) ? { type: "ui", id, kind: d.kind, payload: d.payload } : null;
    case "approval_required":
      return str(d.job_id) && str(d.tool) && str(d.summary)
        ? {
            type: "approval_required",
            id,
            job_id: d.job_id,
            tool: d.tool,
            arguments: d.arguments,
            summary: d.summary,
            expires_at: str(d.expires_at) ? d.expires_at : "",
          }
        : null;
    case "final": {
      const m = d.message;
      if (!isObject(m) || !str(m.content)) return null;
      return {
        type: "final",
        id,
        message: { role: "assistant", content: m.content, ...(m.stopped === true ? { stopped: true } : {}) },
        session_state: isObject(d.session_state) ? d.session_state : {},
        tool_result: d.tool_result ?? null,
        metadata: isObject(d.metadata) && str(d.metadata.notice) ? { notice: d.metadata.notice } : undefined,
      };
    }
    case "error":
      return str(d.code)
        ? { type: "error", id, code: d.code as DataOf<"error">["code"], message: str(d.message) ? d.message : "", details: d.details }
        : null;
    case "debug":
      return str(d.type) ? { type: "debug", id, kind: d.type, payload: d.payload } : null;
    case "done":
      return { type: "done", id };
    default:
      return null;
  }
}
