// A flight search's award and cash results as sortable tables. The columns a traveller
// decides by come first: the price and its booking links before the notes, so a table
// that is wider than its place still shows Book without scrolling sideways. Each row the
// answer offers (it has a number) has Choose beside its links, which sends "Option N" as
// if typed. On a phone each row is a card (styles.css).

import { Fragment } from "preact";
import { useContext, useState } from "preact/hooks";
import { durationMinutes, formatDay, formatLegDuration, parseAmount, priceParts } from "../format";
import { alsoVia, flightNotes, type ProgramPrice } from "../flightNotes";
import { type Texts, Words } from "../i18n";
import { ExternalLink, Links } from "../markdown";
import { Actions, Choosable } from "./context";

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

/** "MUC 10:15 → ORD 12:45 (+1)" on one line, the departure date under it in the turn's
 * language ("26 Feb 2027", "26. Feb. 2027"). */
function Route(props: { from?: { airport?: string; time?: string }; to?: { airport?: string; time?: string } }) {
  const t = useContext(Words);
  const [fromDate, fromTime] = dateAndTime(props.from?.time);
  const [toDate, toTime] = dateAndTime(props.to?.time);
  const days = fromDate && toDate ? Math.round((Date.parse(toDate) - Date.parse(fromDate)) / 86_400_000) : 0;
  return (
    <>
      <span class="leg">
        {props.from?.airport} {fromTime} → {props.to?.airport} {toTime}
        {days > 0 ? <sup class="plus-days">+{days}</sup> : null}
      </span>
      {fromDate ? (
        <time class="date muted" dateTime={fromDate}>
          {formatDay(fromDate, t)}
        </time>
      ) : null}
    </>
  );
}

/** A booking link's label in the page's language: the service names the site ("Book with
 * Miles & More", an upstream's "Book via …"), the page says it in its words. */
const linkLabel = (label: string, t: Texts) => {
  const site = /^Book (?:with|via) (.+)$/i.exec(label)?.[1];
  return site ? t.bookWith(site) : label;
};

/** A price that breaks only between its parts ("66,000 miles" / "+ $41.74"), never inside
 * an amount, so a narrow card wraps it instead of cutting it off. */
function Price(props: { text: string }) {
  return (
    <>
      {priceParts(props.text).map((part, i) => (
        <Fragment key={i}>
          {i ? " " : ""}
          <span class="nowrap">{part}</span>
        </Fragment>
      ))}
    </>
  );
}

/** The column headers in their order; `sort` marks the sortable ones. */
function columns(kind: Kind, numbered: boolean, t: Texts): { key: string; label: string; sort?: SortKey }[] {
  return [
    ...(numbered ? [{ key: "option", label: t.option }] : []),
    ...(kind === "award" ? [{ key: "programme", label: t.programme }] : []),
    { key: "carrier", label: t.carrier, sort: "carrier" as const },
    { key: "route", label: t.route },
    { key: "duration", label: t.duration, sort: "duration" as const },
    { key: "stops", label: t.stops, sort: "stops" as const },
    { key: "price", label: kind === "award" ? t.miles : t.price, sort: "price" as const },
    { key: "book", label: t.book },
    { key: "notes", label: t.notes },
  ];
}

export function FlightTable(props: { flights: Flight[]; kind: Kind }) {
  const [sort, setSort] = useState<{ key: SortKey; asc: boolean }>({ key: "price", asc: true });
  const policy = useContext(Links);
  const t = useContext(Words);
  const actions = useContext(Actions);
  const choosable = useContext(Choosable);
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
      <th scope="col" key={key} aria-sort={active ? (sort.asc ? "ascending" : "descending") : "none"}>
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
            {columns(kind, numbered, t).map((c) =>
              c.key === "option" ? (
                <th scope="col" class="option" key={c.key}>
                  <span aria-hidden="true">#</span>
                  <span class="visually-hidden">{c.label}</span>
                </th>
              ) : c.sort ? (
                header(c.sort, c.label)
              ) : (
                <th scope="col" key={c.key}>
                  {c.label}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>
          {rows.map(({ f, i }) => {
            const links = Object.entries(f.bookingLinks ?? {})
              .map(([label, url]) => [label, typeof url === "string" ? policy.href(url) : null] as const)
              .filter((l): l is readonly [string, string] => l[1] !== null);
            const o = f.outbound ?? {};
            const option = typeof f.option === "number" ? f.option : null;
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
                <td class="leg-duration" data-label={t.duration}>{formatLegDuration(o.duration, t)}</td>
                <td class="leg-stops" data-label={t.stops}>{o.stops ?? f.totalStops}</td>
                <td class="price">
                  <Price text={f.price ?? ""} />
                  {f.pricePerPerson && f.pricePerPerson !== f.price ? (
                    <div class="muted per-person">
                      <Price text={f.pricePerPerson} /> <span class="nowrap">{t.perPerson}</span>
                    </div>
                  ) : null}
                </td>
                <td class="book" data-label={t.book}>
                  {links.length
                    ? links.map(([label, href]) => (
                        <ExternalLink key={label} href={href}>
                          {linkLabel(label, t)}
                        </ExternalLink>
                      ))
                    : <span class="muted">—</span>}
                  {option !== null ? (
                    // The quick replies' way: the message goes as if the user had typed it.
                    <button
                      type="button"
                      class="small choose"
                      aria-label={t.chooseFlight(option)}
                      disabled={actions.busy || !choosable}
                      onClick={() => actions.send(t.chooseMessage(option))}
                    >
                      {t.choose}
                    </button>
                  ) : null}
                </td>
                <td class="notes">
                  {flightNotes(f, Date.now(), t).join(" · ")}
                  {alsoVia(f).length ? <div class="muted">{t.alsoVia} {alsoVia(f).join("; ")}</div> : null}
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
