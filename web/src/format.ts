// Small display helpers.

import { ApiError, TimedOut } from "./api";
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

/** A number in the page's (or turn's) locale: "8,000", "8.000". */
export function formatNumber(n: number, t: Texts): string {
  return new Intl.NumberFormat(t.locale).format(n);
}

/** "2027-02-26" (or a longer RFC 3339 time, read for its date) as a calendar day. */
function dayOf(text: string | null | undefined): Date | null {
  const m = text ? /^(\d{4})-(\d{2})-(\d{2})/.exec(text) : null;
  if (!m) return null;
  const at = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return Number.isNaN(at.getTime()) ? null : at;
}

/** A travel date in the locale: "26 Feb 2027", "26. Feb. 2027"; without the year, "26 Feb",
 * "26. Feb.". A text that is no date stays as it is. The date is a calendar day: no time
 * zone moves it. */
export function formatDay(text: string, t: Texts, year = true): string {
  const at = dayOf(text);
  if (!at) return text;
  return new Intl.DateTimeFormat(t.locale, { day: "numeric", month: "short", ...(year ? { year: "numeric" } : {}), timeZone: "UTC" }).format(at);
}

/** "1–31 Mar 2027", "1.–31. März 2027". */
export function formatDayRange(from: string, to: string, t: Texts): string {
  const a = dayOf(from);
  const b = dayOf(to);
  if (!a || !b) return [from, to].filter(Boolean).join(" – ");
  const f = new Intl.DateTimeFormat(t.locale, { day: "numeric", month: "short", year: "numeric", timeZone: "UTC" });
  return b < a ? f.format(a) : f.formatRange(a, b);
}

/** A moment in the reader's time zone: "26 Feb 2027, 14:05". */
export function formatDateTime(iso: string | null | undefined, t: Texts): string {
  const at = iso ? Date.parse(iso) : NaN;
  if (!Number.isFinite(at)) return iso ?? "";
  return new Intl.DateTimeFormat(t.locale, { dateStyle: "medium", timeStyle: "short" }).format(at);
}

/** A flight's duration as the flight functions write it ("8h 15m") in the locale: "8h 15m",
 * "8 Std. 15 Min."; a text it cannot read stays as it is. */
export function formatLegDuration(text: string | undefined, t: Texts): string {
  const minutes = durationMinutes(text);
  if (!Number.isFinite(minutes)) return text ?? "";
  const unit = (unit: "hour" | "minute", n: number) =>
    new Intl.NumberFormat(t.locale, { style: "unit", unit, unitDisplay: t.durationUnits }).format(n);
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return [h ? unit("hour", h) : "", m || !h ? unit("minute", m) : ""].filter(Boolean).join(" ");
}

/** A price text in the parts that must not break inside: "66,000 miles + $41.74" →
 * ["66,000 miles", "+ $41.74"]. */
export function priceParts(text: string | undefined): string[] {
  if (!text) return [];
  return text.split(/\s+(?=\+\s)/);
}

/** The last flight search of a chat, as the list shows it: "FRA → JFK · 26 Feb". */
export interface RouteOfChat {
  origin: string;
  destination: string;
  date: string;
}

/** A flight search's route and date, from its arguments (`search_flights`' request) or a
 * chat's `session_state.last_flight_request`; null when it has none. */
export function routeOf(request: unknown): RouteOfChat | null {
  if (typeof request !== "object" || request === null) return null;
  const r = request as Record<string, unknown>;
  const date = r.depart_date ?? r.departureDate;
  return typeof r.origin === "string" && typeof r.destination === "string" && typeof date === "string"
    ? { origin: r.origin.toUpperCase(), destination: r.destination.toUpperCase(), date }
    : null;
}

export function routeLabel(route: RouteOfChat, t: Texts): string {
  return `${route.origin} → ${route.destination} · ${formatDay(route.date, t, false)}`;
}

/** When a refused request may be made again (`details.reset_at` of a 429, else its
 * `Retry-After`), as an RFC 3339 time. */
export function retryAt(e: ApiError, now = Date.now()): string | undefined {
  const reset = e.details?.reset_at;
  if (typeof reset === "string" && Number.isFinite(Date.parse(reset))) return reset;
  return e.retryAfter !== undefined && e.retryAfter >= 0 ? new Date(now + e.retryAfter * 1000).toISOString() : undefined;
}

/** "14:05" in the reader's time zone; the text itself when it is no time. */
export function clockTime(iso: string, t: Texts): string {
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : at.toLocaleTimeString(t.locale, { hour: "2-digit", minute: "2-digit" });
}

/** What went wrong, in the reader's language: the router's error code in the page's words
 * (never the router's English message), the page's own timeout, or "Something went wrong". */
export function errorText(e: unknown, t: Texts): string {
  if (e instanceof TimedOut) return t.noAnswerWithin(+(e.ms / 1000).toFixed(2));
  if (e instanceof ApiError) {
    const text = t.errors[e.code] ?? t.somethingWrong;
    const until = e.code === "rate_limited" ? retryAt(e) : undefined;
    return until ? `${text} ${t.possibleAgain(clockTime(until, t))}` : text;
  }
  // fetch's own failure: no answer at all
  if (e instanceof TypeError) return t.errors.connection_lost;
  return t.somethingWrong;
}
