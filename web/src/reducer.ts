// From router events to what the page shows. A turn is a list of blocks in the order they
// happened: the user's message, text the model streamed, a card per tool call, handoff
// lines, quick replies, flight cards, approval boxes, and an error. `reduce` is pure: the
// same events give the same view, live, resumed or replayed.

import type { ApprovalRequest, CallStatus, RouterEvent } from "./events";
import { type Lang, langOf } from "./i18n";

/** How a tool card shows a call. `declined`: the user denied it, or let its approval
 * expire: it did not run, and that is no failure. */
export type CardPhase = "pending" | "running" | "succeeded" | "deduplicated" | "failed" | "declined";

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
  | {
      kind: "error";
      key: string;
      code: string;
      /** The router's own text: for the debug view (the page says the code in its words). */
      message: string;
      /** The page's own words about it (how long it waited), shown to everyone. */
      detail?: string;
      /** When it may work again (RFC 3339), for `rate_limited`. */
      until?: string;
    };

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
  /** The turn's trace, as `init` named it (while the deployment records traces). */
  trace?: { id: string; url?: string | null };
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

const FAILED: ReadonlySet<string> = new Set(["failed", "timeout", "canceled", "rejected", "skipped", "rate_limited"]);

/** The card phase of a router status (event or audit record). `denied`: the user denied
 * the call (`metadata.denied` of its result, the record's `approval.decision`), which the
 * router reports as `canceled`; an `expired` call waited for an approval that never came. */
export function phaseOf(status: string, deduped = false, denied = false): CardPhase {
  if (status === "running") return "running";
  if (status === "queued" || status === "awaiting_approval") return "pending";
  if (status === "succeeded") return deduped ? "deduplicated" : "succeeded";
  if (status === "expired" || (status === "canceled" && denied)) return "declined";
  if (FAILED.has(status)) return "failed";
  return "pending";
}

/** Blocks a turn's answer carries (stored with it as `ui`): a reloaded chat shows them after
 * the answer's text, so a live turn does too, whenever their events came. */
const AFTER_TEXT: ReadonlySet<Block["kind"]> = new Set(["quick_replies", "flight_options", "approval"]);

/** Where the turn's text goes: before the answer's trailing UI blocks. */
function textPlace(blocks: Block[]): number {
  let at = blocks.length;
  while (at > 0 && AFTER_TEXT.has(blocks[at - 1].kind)) at--;
  return at;
}

function insertAt(blocks: Block[], index: number, block: Block): Block[] {
  return [...blocks.slice(0, index), block, ...blocks.slice(index)];
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
        ...(event.trace ? { trace: event.trace } : {}),
      };
    case "assistant_token": {
      const at = textPlace(blocks);
      const last = blocks[at - 1];
      if (turn.streaming && last?.kind === "text") {
        return { ...turn, blocks: replaceAt(blocks, at - 1, { ...last, text: last.text + event.content }) };
      }
      return { ...turn, streaming: true, blocks: insertAt(blocks, at, { kind: "text", key: key("text"), text: event.content }) };
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
        phase: phaseOf(event.status as CallStatus, deduped, event.metadata.denied === true),
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
      return added.length ? { ...turn, blocks: [...blocks, ...added] } : turn;
    }
    case "approval_required": {
      if (hasApproval(blocks, event.job_id)) return turn;
      const { type: _type, id: _id, ...request } = event;
      return { ...turn, blocks: [...blocks, { kind: "approval", key: key("approval"), request }] };
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
        next = insertAt(blocks, textPlace(blocks), { kind: "text", key: key("text"), text: content, ...stopped });
      }
      return {
        ...turn,
        blocks: next,
        streaming: false,
        sessionState: event.session_state,
        notice: event.metadata?.notice ?? undefined,
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
      const details = (typeof event.details === "object" && event.details !== null ? event.details : {}) as Record<string, unknown>;
      const until = typeof details.reset_at === "string" ? { until: details.reset_at } : {};
      return {
        ...turn,
        streaming: false,
        errorCode: event.code,
        blocks: [...next, { kind: "error", key: key("error"), code: event.code, message: event.message, ...until }],
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

/** A turn that failed before its stream began (a JSON error such as 429 or 409), or whose
 * stream the page gave up. `message` is the router's (debug view), `extra` the page's own
 * words and when it may work again. */
export function refused(turn: TurnView, code: string, message: string, extra: { detail?: string; until?: string } = {}): TurnView {
  const more = { ...(extra.detail ? { detail: extra.detail } : {}), ...(extra.until ? { until: extra.until } : {}) };
  return {
    ...turn,
    phase: "failed",
    streaming: false,
    errorCode: code,
    blocks: [...turn.blocks, { kind: "error", key: `${turn.key}:refused:${turn.blocks.length}`, code, message, ...more }],
  };
}

/** Codes for which sending the same request again fails the same way: no Retry for them
 * (the message stays in the box, to be changed). */
export const FINAL_ERRORS: ReadonlySet<string> = new Set([
  "validation_failed",
  "payload_too_large",
  "invalid_json",
  "bad_request",
  "unsupported_media_type",
  "method_not_allowed",
  "idempotency_key_reused",
  "forbidden",
]);

/** A call that waited for the user's approval is shown once, where it was asked for: its
 * card there takes the latest state any later turn reports (running, done, not created),
 * and the decision's turn shows no second card. A reloaded chat shows each call once, with
 * its stored state, at its first place (history.ts): so live and reloaded look the same.
 * `groups` are the blocks of the turns in order (the history's, then the live ones). */
export function settleCalls(groups: Block[][]): Block[][] {
  const asked = new Set<string>();
  for (const g of groups) for (const b of g) if (b.kind === "approval") asked.add(b.request.job_id);
  if (!asked.size) return groups;
  const first = new Map<string, string>();
  const latest = new Map<string, ToolCard>();
  for (const g of groups) {
    for (const b of g) {
      if (b.kind !== "tool" || !b.card.jobId || !asked.has(b.card.jobId)) continue;
      if (!first.has(b.card.jobId)) first.set(b.card.jobId, b.key);
      latest.set(b.card.jobId, b.card);
    }
  }
  return groups.map((g) => {
    let changed = false;
    const out = g.flatMap((b): Block[] => {
      if (b.kind !== "tool" || !b.card.jobId || !first.has(b.card.jobId)) return [b];
      if (first.get(b.card.jobId) !== b.key) {
        changed = true;
        return [];
      }
      const card = latest.get(b.card.jobId)!;
      if (card === b.card) return [b];
      changed = true;
      return [{ ...b, card: { ...card, args: card.args ?? b.card.args } }];
    });
    return changed ? out : g;
  });
}
