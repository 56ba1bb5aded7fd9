// From router events to what the page shows. A turn is a list of blocks in the order they
// happened: the user's message, text the model streamed, a card per tool call, handoff
// lines, quick replies, flight cards, approval boxes, and an error. `reduce` is pure: the
// same events give the same view, live, resumed or replayed.

import type { ApprovalRequest, CallStatus, RouterEvent } from "./events";
import { type Lang, langOf } from "./i18n";

/** How a tool card shows a call. */
export type CardPhase = "pending" | "running" | "succeeded" | "deduplicated" | "failed";

export interface ToolCard {
  /** The ledger call id; null for a call refused before it ran. */
  jobId: string | null;
  tool: string;
  phase: CardPhase;
  /** The router's status word (`running`, `succeeded`, `timeout`, `rate_limited`, …). */
  status: string;
  deduped: boolean;
  progress?: string;
  metadata: Record<string, unknown>;
  result?: unknown;
  /** Milliseconds from start to result, when both were seen (or stored). */
  durationMs?: number;
  startedAt?: number;
  /** Stored arguments (history) or fetched on demand. */
  args?: unknown;
}

export interface QuickRepliesPayload {
  replies: string[];
}

export type Block =
  | { kind: "user"; key: string; text: string }
  | { kind: "text"; key: string; text: string; stopped?: boolean }
  | { kind: "tool"; key: string; card: ToolCard }
  | { kind: "handoff"; key: string; from: string; to: string; reason: string }
  | { kind: "quick_replies"; key: string; replies: string[] }
  | { kind: "flight_options"; key: string; flights: unknown[] }
  | { kind: "approval"; key: string; request: ApprovalRequest; decided?: string }
  | { kind: "error"; key: string; code: string; message: string };

export type TurnPhase = "sending" | "streaming" | "done" | "failed";

export interface TurnView {
  /** The page's own key for the turn (stable before `init`). */
  key: string;
  chatId?: string;
  turnId?: string;
  phase: TurnPhase;
  blocks: Block[];
  /** The last text block is still growing. */
  streaming: boolean;
  notice?: string;
  sessionState?: Record<string, unknown>;
  cancelRequested?: boolean;
  /** The code of the turn's error, if it failed. */
  errorCode?: string;
  /** Its `done` came: the router ended the turn (asking again means a new turn). */
  ended?: boolean;
  /** The turn's language, as `init` named it. */
  language?: Lang;
}

export function newTurn(key: string, userText?: string): TurnView {
  return {
    key,
    phase: "sending",
    blocks: userText === undefined ? [] : [{ kind: "user", key: `${key}:user`, text: userText }],
    streaming: false,
  };
}

/** Error codes whose message was streamed and stored as the turn's answer (docs/api.md). */
export const ANSWERED_ERRORS: ReadonlySet<string> = new Set(["guardrail", "invalid_tool_call"]);

const FAILED: ReadonlySet<string> = new Set([
  "failed",
  "timeout",
  "canceled",
  "rejected",
  "skipped",
  "rate_limited",
  "expired",
]);

/** The card phase of a router status (event or audit record). */
export function phaseOf(status: string, deduped = false): CardPhase {
  if (status === "running") return "running";
  if (status === "queued" || status === "awaiting_approval") return "pending";
  if (status === "succeeded") return deduped ? "deduplicated" : "succeeded";
  if (FAILED.has(status)) return "failed";
  return "pending";
}

function cardIndex(blocks: Block[], jobId: string | null): number {
  if (jobId === null) return -1;
  return blocks.findIndex((b) => b.kind === "tool" && b.card.jobId === jobId);
}

function replaceAt(blocks: Block[], index: number, block: Block): Block[] {
  const copy = blocks.slice();
  copy[index] = block;
  return copy;
}

function asApproval(payload: unknown): ApprovalRequest | null {
  if (typeof payload !== "object" || payload === null) return null;
  const p = payload as Record<string, unknown>;
  if (typeof p.job_id !== "string" || typeof p.summary !== "string") return null;
  return {
    job_id: p.job_id,
    tool: typeof p.tool === "string" ? p.tool : "",
    arguments: p.arguments,
    summary: p.summary,
    expires_at: typeof p.expires_at === "string" ? p.expires_at : "",
  };
}

/** The blocks of a `ui` element (event or stored with an answer); none for a kind the page
 * does not know. */
export function uiBlocks(kind: string, payload: unknown, key: string): Block[] {
  const p = (typeof payload === "object" && payload !== null ? payload : {}) as Record<string, unknown>;
  switch (kind) {
    case "quick_replies": {
      const replies = Array.isArray(p.replies) ? p.replies.filter((r): r is string => typeof r === "string") : [];
      return replies.length ? [{ kind: "quick_replies", key, replies }] : [];
    }
    case "flight_options":
      return Array.isArray(p.flights) ? [{ kind: "flight_options", key, flights: p.flights }] : [];
    case "approval": {
      const request = asApproval(payload);
      return request ? [{ kind: "approval", key, request }] : [];
    }
    default:
      return [];
  }
}

/** `now` is when the event arrived (ms), for the cards' durations. */
export function reduce(turn: TurnView, event: RouterEvent, now: number): TurnView {
  const key = (suffix: string) => `${turn.key}:${event.id ?? turn.blocks.length}:${suffix}`;
  const blocks = turn.blocks;
  switch (event.type) {
    case "init":
      return {
        ...turn,
        chatId: event.chat_id,
        turnId: event.turn_id,
        phase: "streaming",
        ...(event.language ? { language: langOf(event.language) } : {}),
      };
    case "assistant_token": {
      const last = blocks[blocks.length - 1];
      if (turn.streaming && last?.kind === "text") {
        return { ...turn, blocks: replaceAt(blocks, blocks.length - 1, { ...last, text: last.text + event.content }) };
      }
      return { ...turn, streaming: true, blocks: [...blocks, { kind: "text", key: key("text"), text: event.content }] };
    }
    case "tool_started": {
      const card: ToolCard = {
        jobId: event.job_id,
        tool: event.tool,
        phase: event.status === "queued" ? "pending" : "running",
        status: event.status,
        deduped: event.deduped,
        metadata: {},
        startedAt: now,
      };
      const at = cardIndex(blocks, event.job_id);
      const block: Block = { kind: "tool", key: key("tool"), card };
      return { ...turn, streaming: false, blocks: at < 0 ? [...blocks, block] : replaceAt(blocks, at, { ...block, key: blocks[at].key }) };
    }
    case "tool_progress": {
      const at = cardIndex(blocks, event.job_id);
      if (at < 0) return turn;
      const old = blocks[at] as Extract<Block, { kind: "tool" }>;
      return { ...turn, blocks: replaceAt(blocks, at, { ...old, card: { ...old.card, progress: event.message } }) };
    }
    case "tool_result": {
      const at = cardIndex(blocks, event.job_id);
      const old = at < 0 ? undefined : (blocks[at] as Extract<Block, { kind: "tool" }>).card;
      const deduped = old?.deduped ?? false;
      const card: ToolCard = {
        jobId: event.job_id,
        tool: event.tool,
        phase: phaseOf(event.status as CallStatus, deduped),
        status: event.status,
        deduped,
        metadata: event.metadata,
        result: event.result,
        startedAt: old?.startedAt,
        durationMs: old?.startedAt !== undefined ? Math.max(0, now - old.startedAt) : undefined,
      };
      if (at < 0) {
        return { ...turn, streaming: false, blocks: [...blocks, { kind: "tool", key: key("tool"), card }] };
      }
      return { ...turn, blocks: replaceAt(blocks, at, { kind: "tool", key: blocks[at].key, card }) };
    }
    case "handoff":
      return {
        ...turn,
        streaming: false,
        blocks: [...blocks, { kind: "handoff", key: key("handoff"), from: event.from, to: event.to, reason: event.reason }],
      };
    case "ui": {
      const added = uiBlocks(event.kind, event.payload, key("ui")).filter(
        (b) => b.kind !== "approval" || !hasApproval(blocks, b.request.job_id),
      );
      return added.length ? { ...turn, streaming: false, blocks: [...blocks, ...added] } : turn;
    }
    case "approval_required": {
      if (hasApproval(blocks, event.job_id)) return turn;
      const { type: _type, id: _id, ...request } = event;
      return { ...turn, streaming: false, blocks: [...blocks, { kind: "approval", key: key("approval"), request }] };
    }
    case "final": {
      // The stored answer is what counts: it replaces the streamed text of the last text
      // block (they are the same unless a guard cut the stream), or stands alone. A stopped
      // turn's answer is what it had said, marked as stopped.
      const content = event.message.content;
      const stopped = event.message.stopped === true ? { stopped: true } : {};
      let next = blocks;
      const lastText = findLastIndex(blocks, (b) => b.kind === "text");
      if (lastText >= 0) {
        const old = blocks[lastText] as Extract<Block, { kind: "text" }>;
        if ((content && old.text !== content) || event.message.stopped)
          next = replaceAt(blocks, lastText, { ...old, text: content || old.text, ...stopped });
      } else if (content) {
        next = [...blocks, { kind: "text", key: key("text"), text: content, ...stopped }];
      }
      return {
        ...turn,
        blocks: next,
        streaming: false,
        sessionState: event.session_state,
        notice: event.metadata?.notice,
      };
    }
    case "error": {
      // For these codes the message is the answer the turn streamed and stored.
      let next = blocks;
      const lastText = findLastIndex(blocks, (b) => b.kind === "text");
      if (ANSWERED_ERRORS.has(event.code) && lastText >= 0 && event.message) {
        const old = blocks[lastText] as Extract<Block, { kind: "text" }>;
        if (old.text.endsWith(event.message)) next = replaceAt(blocks, lastText, { ...old, text: event.message });
      }
      return {
        ...turn,
        streaming: false,
        errorCode: event.code,
        blocks: [...next, { kind: "error", key: key("error"), code: event.code, message: event.message }],
      };
    }
    case "done":
      return { ...turn, streaming: false, ended: true, phase: turn.errorCode ? "failed" : "done" };
    case "debug":
      return turn;
    default:
      return turn; // an event this page does not know
  }
}

function hasApproval(blocks: Block[], jobId: string): boolean {
  return blocks.some((b) => b.kind === "approval" && b.request.job_id === jobId);
}

function findLastIndex<T>(items: T[], test: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (test(items[i])) return i;
  return -1;
}

/** A turn that failed before its stream began (a JSON error such as 429 or 409). */
export function refused(turn: TurnView, code: string, message: string): TurnView {
  return {
    ...turn,
    phase: "failed",
    streaming: false,
    errorCode: code,
    blocks: [...turn.blocks, { kind: "error", key: `${turn.key}:refused:${turn.blocks.length}`, code, message }],
  };
}
