// A reloaded chat: its stored messages (oldest first) and its tool calls' audit records
// become the same blocks a live turn shows, with each call's stored result and duration,
// and each approval box with its outcome.

import type { StoredMessage, ToolCallRecord } from "./api";
import { type Lang, langOf } from "./i18n";
import { type Block, type ToolCard, phaseOf, uiBlocks } from "./reducer";

export function durationOf(record: ToolCallRecord): number | undefined {
  if (!record.started_at || !record.finished_at) return undefined;
  const ms = Date.parse(record.finished_at) - Date.parse(record.started_at);
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** The card of a stored call. A call the user denied is `canceled` with the approval's
 * decision `denied`: the same card as the live `tool_result` (`metadata.denied`). */
export function cardOf(record: ToolCallRecord): ToolCard {
  const response = record.response ?? undefined;
  const metadata: Record<string, unknown> = { ...(response?.metadata ?? {}) };
  if (record.status !== "succeeded" && record.error && metadata.error === undefined) {
    metadata.error = record.error;
  }
  if (record.approval?.decision === "denied") metadata.denied = true;
  return {
    jobId: record.id,
    tool: record.tool,
    phase: phaseOf(record.status, false, metadata.denied === true),
    status: record.status,
    deduped: false,
    metadata,
    result: response?.raw,
    durationMs: durationOf(record),
    args: record.request,
  };
}

/** What became of a call that asked for approval, as an approval box says it: `approved` or
 * `declined` (the user's decision, as the page marks it when they click), else
 * `status:<status>` once it no longer waits (expired); undefined while it waits. */
export function decisionOf(record: ToolCallRecord | undefined): string | undefined {
  if (!record) return undefined;
  if (record.approval?.decision === "approved") return "approved";
  if (record.approval?.decision === "denied") return "declined";
  return record.status === "awaiting_approval" ? undefined : `status:${record.status}`;
}

/** Blocks of a chat's history. `messages` oldest first; `records` by call id. */
export function historyBlocks(messages: StoredMessage[], records: Map<string, ToolCallRecord>): Block[] {
  const blocks: Block[] = [];
  const shown = new Set<string>();
  for (const m of messages) {
    const key = `m:${m.id}`;
    switch (m.role) {
      case "user":
        blocks.push({ kind: "user", key, text: m.content });
        break;
      case "assistant":
        if (m.content.trim()) blocks.push({ kind: "text", key, text: m.content, ...(m.stopped ? { stopped: true } : {}) });
        (m.ui ?? []).forEach((element, i) =>
          blocks.push(
            ...uiBlocks(element.kind, element.payload, `${key}:ui${i}`).map((b): Block => {
              if (b.kind !== "approval") return b;
              const decided = decisionOf(records.get(b.request.job_id));
              return decided ? { ...b, decided } : b;
            }),
          ),
        );
        break;
      case "tool": {
        const id = m.ledger_call_id;
        const record = id ? records.get(id) : undefined;
        if (!id || !record || shown.has(id)) break;
        shown.add(id);
        if (record.tool === "handoff") {
          const r = (record.request ?? {}) as Record<string, unknown>;
          blocks.push({
            kind: "handoff",
            key,
            from: String(r.from ?? ""),
            to: String(r.to ?? ""),
            reason: String(r.reason ?? ""),
          });
        } else {
          blocks.push({ kind: "tool", key, card: cardOf(record) });
        }
        break;
      }
      default:
        break;
    }
  }
  return blocks;
}

/** A reloaded chat's turns: each user message starts one; its language is its answer's. */
export interface HistoryTurn {
  key: string;
  language?: Lang;
  blocks: Block[];
}

export function historyTurns(messages: StoredMessage[], records: Map<string, ToolCallRecord>): HistoryTurn[] {
  const groups: StoredMessage[][] = [];
  for (const m of messages) {
    if (m.role === "user" || !groups.length) groups.push([]);
    groups[groups.length - 1].push(m);
  }
  return groups.map((group) => {
    const answer = [...group].reverse().find((m) => m.role === "assistant" && m.language);
    return {
      key: `h:${group[0].id}`,
      ...(answer?.language ? { language: langOf(answer.language) } : {}),
      blocks: historyBlocks(group, records),
    };
  });
}
