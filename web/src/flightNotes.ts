// What a flight row says besides its price and times: the same rules as the chat message
// and the terminal client (shared/domain/src/flight_notes.rs), in the turn's language.

import { type Texts, textsFor } from "./i18n";

export interface ProgramPrice {
  program?: string | null;
  price?: string;
  pricePerPerson?: string;
  miles?: number | null;
  seatsLeft?: number | null;
  bookingLinks?: Record<string, string> | null;
}

export interface NotedFlight {
  provider?: string;
  seatsLeft?: number | null;
  seenAt?: string | null;
  inbound?: unknown;
  tags?: string[];
  otherPrograms?: ProgramPrice[];
}

const isCash = (f: NotedFlight) => f.provider === "amadeus" || f.provider === "duffel";

/** "seen 3 h ago"; nothing for a time to come or one that cannot be read. */
export function seenAgo(at: string | null | undefined, now: number, t: Texts = textsFor("en")): string | null {
  if (!at) return null;
  const then = Date.parse(at);
  if (Number.isNaN(then)) return null;
  const minutes = Math.floor((now - then) / 60_000);
  if (minutes < 0) return null;
  if (minutes < 60) return t.seenMin(Math.max(1, minutes));
  if (minutes < 2880) return t.seenH(Math.floor(minutes / 60));
  return t.seenDays(Math.floor(minutes / 1440));
}

/** The row's notes, in display order. */
export function flightNotes(f: NotedFlight, now: number = Date.now(), t: Texts = textsFor("en")): string[] {
  const notes: string[] = [];
  if (isCash(f)) {
    notes.push(f.inbound ? t.roundTrip : t.oneWay);
  } else {
    notes.push(f.seatsLeft != null ? t.seats(f.seatsLeft) : t.seatsUnknown);
    const seen = seenAgo(f.seenAt, now, t);
    if (seen) notes.push(seen);
  }
  // The fare's terms ("fare: Light", "changes: free"); bare flags repeat the stops.
  for (const tag of f.tags ?? []) if (typeof tag === "string" && tag.includes(":")) notes.push(tag);
  return notes;
}

/** "Air Canada Aeroplan 70,000 miles" for each other programme that prices the flight. */
export function alsoVia(f: NotedFlight): string[] {
  return (f.otherPrograms ?? []).map((o) => `${o.program ?? "?"} ${o.pricePerPerson ?? o.price ?? ""}`.trim());
}
