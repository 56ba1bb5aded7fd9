// A flight search's award and cash results as sortable tables.

import { useContext, useState } from "preact/hooks";
import { durationMinutes, parseAmount } from "../format";
import { alsoVia, flightNotes, type ProgramPrice } from "../flightNotes";
import { Words } from "../i18n";
import { ExternalLink, Links } from "../markdown";

export interface Flight {
  id?: string;
  /** The number the answer offers this row under (and `select_flight` takes). */
  option?: number | null;
  provider?: string;
  price?: string;
  pricePerPerson?: string;
  program?: string | null;
  seenAt?: string | null;
  tags?: string[];
  otherPrograms?: ProgramPrice[];
  inbound?: unknown;
  airline?: string;
  cabin?: string;
  totalStops?: number;
  miles?: number | null;
  taxes?: { amount?: number; currency?: string };
  seatsLeft?: number | null;
  bookingLinks?: Record<string, string> | null;
  outbound?: {
    departure?: { airport?: string; time?: string };
    arrival?: { airport?: string; time?: string };
    duration?: string;
    stops?: string;
    flightNumbers?: string;
  };
}

type Kind = "award" | "cash";
type SortKey = "price" | "stops" | "duration" | "carrier";

/** The flights of one provider's reply (`{success, results: {flights}}`), or none. */
export function flightsOf(reply: unknown): Flight[] {
  const r = reply as { results?: { flights?: unknown } } | null | undefined;
  const flights = r?.results?.flights;
  return Array.isArray(flights) ? flights.filter((f): f is Flight => typeof f === "object" && f !== null) : [];
}

/** Award and cash lists of a `search_flights` result, when it has them. */
export function flightLists(result: unknown): { award: Flight[]; cash: Flight[] } | null {
  if (typeof result !== "object" || result === null) return null;
  const r = result as Record<string, unknown>;
  // `amadeusResult`: what chats stored before the cash search had two providers.
  if (!("seatsResult" in r) && !("cashResult" in r) && !("amadeusResult" in r)) return null;
  return { award: flightsOf(r.seatsResult), cash: flightsOf(r.cashResult ?? r.amadeusResult) };
}

function sortValue(f: Flight, key: SortKey, kind: Kind): number | string {
  switch (key) {
    case "price":
      return kind === "award" ? (f.miles ?? Infinity) : parseAmount(f.price) || Infinity;
    case "stops":
      return f.totalStops ?? Infinity;
    case "duration":
      return durationMinutes(f.outbound?.duration);
    case "carrier":
      return `${f.airline ?? ""} ${f.outbound?.flightNumbers ?? ""}`;
  }
}

/** "2027-06-03T10:15" → ["2027-06-03", "10:15"]; other texts as they are. */
function dateAndTime(t: string | undefined): [string, string] {
  const m = t ? /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})/.exec(t) : null;
  return m ? [m[1], m[2]] : ["", t ?? ""];
}

/** "MUC 10:15 → ORD 12:45 (+1)" on one line, the departure date under it. */
function Route(props: { from?: { airport?: string; time?: string }; to?: { airport?: string; time?: string } }) {
  const [fromDate, fromTime] = dateAndTime(props.from?.time);
  const [toDate, toTime] = dateAndTime(props.to?.time);
  const days = fromDate && toDate ? Math.round((Date.parse(toDate) - Date.parse(fromDate)) / 86_400_000) : 0;
  return (
    <>
      <span class="leg">
        {props.from?.airport} {fromTime} → {props.to?.airport} {toTime}
        {days > 0 ? <sup class="plus-days">+{days}</sup> : null}
      </span>
      {fromDate ? <span class="date muted">{fromDate}</span> : null}
    </>
  );
}

/** A booking link's label without the upstream's English "Book via ", under "Book". */
const linkLabel = (label: string) => label.replace(/^Book via /i, "");

export function FlightTable(props: { flights: Flight[]; kind: Kind }) {
  const [sort, setSort] = useState<{ key: SortKey; asc: boolean }>({ key: "price", asc: true });
  const policy = useContext(Links);
  const t = useContext(Words);
  const { kind } = props;
  const rows = props.flights
    .map((f, i) => ({ f, i }))
    .sort((a, b) => {
      const x = sortValue(a.f, sort.key, kind);
      const y = sortValue(b.f, sort.key, kind);
      const c = x < y ? -1 : x > y ? 1 : a.i - b.i;
      return sort.asc ? c : -c;
    });
  const header = (key: SortKey, label: string) => {
    const active = sort.key === key;
    return (
      <th scope="col" aria-sort={active ? (sort.asc ? "ascending" : "descending") : "none"}>
        <button
          type="button"
          class="sort"
          data-sort={key}
          onClick={() => setSort({ key, asc: active ? !sort.asc : true })}
        >
          {label}
          <span aria-hidden="true">{active ? (sort.asc ? " ▲" : " ▼") : ""}</span>
        </button>
      </th>
    );
  };
  const caption = kind === "award" ? t.award : t.cash;
  // The answer names rows by number; rows of older chats carry none, and show no column.
  const numbered = props.flights.some((f) => typeof f.option === "number");
  return (
    <div class="table-wrap">
      <table class={`flights ${kind}${numbered ? " numbered" : ""}`} data-kind={kind}>
        <caption>
          {caption} <span class="count">({props.flights.length})</span>
        </caption>
        <thead>
          <tr>
            {numbered ? (
              <th scope="col" class="option">
                <span aria-hidden="true">#</span>
                <span class="visually-hidden">{t.option}</span>
              </th>
            ) : null}
            {kind === "award" ? <th scope="col">{t.programme}</th> : null}
            {header("carrier", t.carrier)}
            <th scope="col">{t.route}</th>
            {header("duration", t.duration)}
            {header("stops", t.stops)}
            {header("price", kind === "award" ? t.miles : t.price)}
            <th scope="col">{t.notes}</th>
            <th scope="col">{t.book}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(({ f, i }) => {
            const links = Object.entries(f.bookingLinks ?? {})
              .map(([label, url]) => [label, typeof url === "string" ? policy.href(url) : null] as const)
              .filter((l): l is readonly [string, string] => l[1] !== null);
            const o = f.outbound ?? {};
            return (
              <tr key={f.id ?? i}>
                {numbered ? (
                  <td class="option" data-label={t.option}>
                    {typeof f.option === "number" ? f.option : ""}
                  </td>
                ) : null}
                {kind === "award" ? <td class="programme">{f.program ?? "—"}</td> : null}
                <td class="carrier">
                  <strong>{f.airline}</strong> <span class="muted">{o.flightNumbers}</span>
                  {f.cabin ? <div class="muted">{f.cabin}</div> : null}
                </td>
                <td class="route">
                  <Route from={o.departure} to={o.arrival} />
                </td>
                <td class="leg-duration" data-label={t.duration}>{o.duration}</td>
                <td class="leg-stops" data-label={t.stops}>{o.stops ?? f.totalStops}</td>
                <td class="price">
                  {f.price}
                  {f.pricePerPerson && f.pricePerPerson !== f.price ? (
                    <div class="muted">{t.perPerson(f.pricePerPerson)}</div>
                  ) : null}
                </td>
                <td class="notes">
                  {flightNotes(f, Date.now(), t).join(" · ")}
                  {alsoVia(f).length ? <div class="muted">{t.alsoVia} {alsoVia(f).join("; ")}</div> : null}
                </td>
                <td class="book">
                  {links.length
                    ? links.map(([label, href]) => (
                        <ExternalLink key={label} href={href}>
                          {linkLabel(label)}
                        </ExternalLink>
                      ))
                    : <span class="muted">—</span>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

export function FlightResults(props: { result: unknown }) {
  const t = useContext(Words);
  const lists = flightLists(props.result);
  if (!lists) return null;
  if (!lists.award.length && !lists.cash.length) return <p class="muted">{t.noFlights}</p>;
  return (
    <div class="flight-results">
      {lists.award.length ? <FlightTable flights={lists.award} kind="award" /> : null}
      {lists.cash.length ? <FlightTable flights={lists.cash} kind="cash" /> : null}
    </div>
  );
}
