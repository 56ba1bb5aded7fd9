// Small display helpers.

import type { Texts } from "./i18n";

/** A tool's name for people; a tool the page does not know (an external MCP server's) is
 * "Assistant tool", its id shown in the debug view only. */
export function toolLabel(tool: string, t: Texts): string {
  return t.tools[tool] ?? t.otherTool;
}

export function formatDuration(ms: number | undefined, t: Texts): string {
  if (ms === undefined) return "";
  const n = (x: number, digits = 0) => x.toLocaleString(t.locale, { minimumFractionDigits: digits, maximumFractionDigits: digits });
  if (ms < 1000) return `${n(Math.round(ms))} ms`;
  if (ms < 60_000) return `${n(ms / 1000, 1)} s`;
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

export function relativeTime(iso: string, t: Texts, now = Date.now()): string {
  const at = Date.parse(iso);
  if (!Number.isFinite(at)) return "";
  const s = Math.round((now - at) / 1000);
  if (s < 60) return t.justNow;
  if (s < 3600) return t.minAgo(Math.floor(s / 60));
  if (s < 86400) return t.hAgo(Math.floor(s / 3600));
  return new Date(at).toLocaleDateString(t.locale, { day: "numeric", month: "short", year: "numeric" });
}
