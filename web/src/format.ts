// Small display helpers.

import type { CardPhase } from "./reducer";

const TOOL_LABELS: Record<string, string> = {
  search_flights: "Flight search",
  search_knowledge_base: "Knowledge base",
  ask_gpt: "Ask the model",
  award_value: "Award value",
  remember: "Remember",
  select_flight: "Select flight",
  suggest_replies: "Suggested replies",
  show_flight_options: "Flight options",
  create_fare_alert: "Fare alert",
};

export function toolLabel(tool: string): string {
  return TOOL_LABELS[tool] ?? tool;
}

export const PHASE_LABELS: Record<CardPhase, string> = {
  pending: "pending",
  running: "running",
  succeeded: "succeeded",
  deduplicated: "deduplicated",
  failed: "failed",
};

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** "9h 10m" (or "9 Std. 10 Min.") → minutes; unknown → Infinity, so it sorts last. */
export function durationMinutes(text: string | undefined): number {
  if (!text) return Infinity;
  const h = /(\d+)\s*(h|std)/i.exec(text);
  const m = /(\d+)\s*(m(?!i?les)|min)/i.exec(text);
  if (!h && !m) return Infinity;
  return (h ? Number(h[1]) * 60 : 0) + (m ? Number(m[1]) : 0);
}

/** The first amount in a price text such as "$1,234.56", "1.234,56 €" or "€ 980";
 * NaN without one. */
export function parseAmount(text: string | undefined): number {
  const m = text ? /\d[\d.,\s]*/.exec(text) : null;
  if (!m) return NaN;
  let s = m[0].replace(/\s/g, "").replace(/[.,]$/, "");
  const lastSep = Math.max(s.lastIndexOf("."), s.lastIndexOf(","));
  if (lastSep >= 0 && s.length - lastSep - 1 === 2) {
    s = s.slice(0, lastSep).replace(/[.,]/g, "") + "." + s.slice(lastSep + 1);
  } else {
    s = s.replace(/[.,]/g, "");
  }
  return Number(s);
}

export function relativeTime(iso: string, now = Date.now()): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return "";
  const s = Math.round((now - t) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(t).toISOString().slice(0, 10);
}
