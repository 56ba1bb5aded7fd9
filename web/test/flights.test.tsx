import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { render } from "preact";
import { afterEach, describe, expect, it } from "vitest";
import { FlightTable, type Flight } from "../src/components/FlightTable";
import { flightNotes, seenAgo } from "../src/flightNotes";
import { formatDay, formatLegDuration, priceParts } from "../src/format";
import { textsFor, Words } from "../src/i18n";
import { LinkPolicy } from "../src/links";
import { Links } from "../src/markdown";

let root: HTMLElement | undefined;
function mount(node: preact.ComponentChild): HTMLElement {
  root = document.createElement("div");
  document.body.append(root);
  render(node, root);
  return root;
}
afterEach(() => {
  if (root) render(null, root);
  root?.remove();
  root = undefined;
});

const now = Date.parse("2027-02-01T12:10:00Z");
const leg = {
  departure: { airport: "FRA", time: "2027-03-01T10:00" },
  arrival: { airport: "JFK", time: "2027-03-01T12:45" },
  duration: "8h 45m",
  stops: "Nonstop",
  flightNumbers: "LH400",
};

describe("flight rows say what they are", () => {
  it("names the award programme, seats or 'seats unknown', freshness and other programmes", () => {
    const flight: Flight = {
      id: "a",
      provider: "seatsaero",
      price: "120,000 miles",
      pricePerPerson: "60,000 miles",
      airline: "LH",
      program: "Miles & More",
      seatsLeft: null,
      seenAt: new Date(Date.now() - 3 * 3600_000 - 60_000).toISOString(),
      otherPrograms: [{ program: "Air Canada Aeroplan", pricePerPerson: "70,000 miles" }],
      outbound: leg,
    };
    const el = mount(<FlightTable kind="award" flights={[flight]} />);
    const headers = [...el.querySelectorAll("th")].map((th) => th.textContent?.replace(/[▲▼]/g, "").trim());
    expect(headers[0]).toBe("Programme");
    const cells = [...el.querySelectorAll("tbody td")].map((td) => td.textContent);
    expect(cells[0]).toBe("Miles & More");
    expect(el.querySelector("td.price")?.textContent).toContain("60,000 miles per person");
    expect(el.querySelector("td.notes")?.textContent).toContain("seats unknown · seen 3 h ago");
    expect(el.querySelector("td.notes")?.textContent).toContain("Also via: Air Canada Aeroplan 70,000 miles");
  });

  it("shows the number the answer offers each row under, and no column for rows without one", () => {
    const row = (id: string, option: number | undefined, miles: number): Flight => ({
      id,
      option,
      provider: "seatsaero",
      price: `${miles} miles`,
      pricePerPerson: `${miles} miles`,
      miles,
      airline: "LH",
      program: "Miles & More",
      outbound: leg,
    });
    // Sorted by miles, the numbers stay with their rows.
    const el = mount(<FlightTable kind="award" flights={[row("a", 1, 70000), row("b", 2, 55000)]} />);
    expect(el.querySelector("table")?.classList.contains("numbered")).toBe(true);
    const first = el.querySelector("th");
    expect(first?.classList.contains("option")).toBe(true);
    expect(first?.querySelector(".visually-hidden")?.textContent).toBe("Number");
    const numbers = [...el.querySelectorAll("tbody td.option")].map((td) => td.textContent);
    expect(numbers).toEqual(["2", "1"]);
  });

  it("shows no number column for rows without numbers (chats stored before them)", () => {
    const flight: Flight = { id: "c", provider: "seatsaero", price: "1 mile", airline: "LH", outbound: leg };
    const el = mount(<FlightTable kind="award" flights={[flight]} />);
    expect(el.querySelector(".option")).toBeNull();
    expect(el.querySelector("table")?.classList.contains("numbered")).toBe(false);
  });

  it("says one-way or round trip and the fare's terms for cash fares", () => {
    expect(flightNotes({ provider: "duffel", tags: ["nonstop", "fare: Light", "changes: free"] }, now)).toEqual([
      "one-way",
      "fare: Light",
      "changes: free",
    ]);
    expect(flightNotes({ provider: "amadeus", inbound: leg }, now)).toEqual(["round trip"]);
    expect(flightNotes({ provider: "seatsaero", seatsLeft: 4 }, now)).toEqual(["4 seats"]);
    expect(seenAgo("2027-01-28T12:10:00Z", now)).toBe("seen 4 days ago");
    expect(seenAgo("2027-02-01T13:00:00Z", now)).toBeNull();
    expect(seenAgo("not a time", now)).toBeNull();
  });
});

describe("the flight table fits its place", () => {
  const award: Flight = {
    id: "w",
    option: 1,
    provider: "seatsaero",
    price: "132,000 miles + $83.48",
    pricePerPerson: "66,000 miles + $41.74",
    miles: 66000,
    airline: "Lufthansa",
    program: "Miles & More",
    bookingLinks: { "Book via Miles & More": "https://www.miles-and-more.com/x" },
    seatsLeft: 2,
    outbound: { ...leg, duration: "8h 15m" },
  };
  const links = new LinkPolicy([".miles-and-more.com"]);
  const table = (lang: "en" | "de", flights = [award]) =>
    mount(
      <Links.Provider value={links}>
        <Words.Provider value={textsFor(lang)}>
          <FlightTable kind="award" flights={flights} />
        </Words.Provider>
      </Links.Provider>,
    );

  it("puts Book right after the price and the notes last, so Book is on screen without scrolling sideways", () => {
    const el = table("en");
    const headers = [...el.querySelectorAll("thead th")].map((th) => th.textContent?.replace(/[▲▼]/g, "").trim());
    expect(headers).toEqual(["#Number", "Programme", "Carrier", "Route", "Duration", "Stops", "Miles", "Book", "Notes"]);
    const cells = [...el.querySelectorAll("tbody tr:first-child td")].map((td) => td.className);
    expect(cells).toEqual(["option", "programme", "carrier", "route", "leg-duration", "leg-stops", "price", "book", "notes"]);
    expect(el.querySelector("td.price + td.book a")?.textContent).toBe("Book with Miles & More");
    // In the page's language, whatever words the service used.
    expect(table("de").querySelector("td.book a")?.textContent).toBe("Buchen bei Miles & More");
  });

  it("breaks a price only between its parts, never inside an amount", () => {
    const el = table("en");
    const price = el.querySelector("td.price")!;
    expect([...price.querySelectorAll(":scope > .nowrap")].map((s) => s.textContent)).toEqual(["132,000 miles", "+ $83.48"]);
    expect([...price.querySelectorAll(".per-person .nowrap")].map((s) => s.textContent)).toEqual(["66,000 miles", "+ $41.74", "per person"]);
    // The spaces between the parts are outside them: a line may break there.
    expect(price.textContent).toBe("132,000 miles + $83.48" + "66,000 miles + $41.74 per person");
    expect(priceParts("70.000 Meilen + 41,74 $")).toEqual(["70.000 Meilen", "+ 41,74 $"]);
    expect(priceParts("$1,234.50")).toEqual(["$1,234.50"]);
  });

  it("writes travel dates and durations in the turn's language", () => {
    const en = table("en");
    expect(en.querySelector("td.route .date")?.textContent).toBe("1 Mar 2027");
    expect(en.querySelector("td.route time")?.getAttribute("datetime")).toBe("2027-03-01");
    expect(en.querySelector("td.leg-duration")?.textContent).toBe("8h 15m");
    render(null, root!);
    root!.remove();
    const de = table("de");
    expect(de.querySelector("td.route .date")?.textContent).toBe("1. März 2027");
    expect(de.querySelector("td.leg-duration")?.textContent).toBe("8 Std. 15 Min.");
    expect(de.querySelector("td.notes")?.textContent).toContain("2 Plätze");
    expect(de.querySelector("td.price .per-person")?.textContent).toContain("pro Person");
    expect(formatLegDuration("45m", textsFor("de"))).toBe("45 Min.");
    expect(formatLegDuration("11 Std. 5 Min.", textsFor("en"))).toBe("11h 5m");
    expect(formatLegDuration("about a day", textsFor("en"))).toBe("about a day");
    expect(formatDay("2027-02-26", textsFor("de"))).toBe("26. Feb. 2027");
    expect(formatDay("2027-02-26", textsFor("en"), false)).toBe("26 Feb");
  });
});

/** The rules of styles.css: selector → declarations, and those inside the phone block. */
function cssRules(css: string): { phone: Map<string, string>; all: Map<string, string> } {
  const clean = css.replace(/\/\*[\s\S]*?\*\//g, "");
  const at = clean.indexOf("@media (max-width: 720px)");
  const rules = (text: string) => {
    const map = new Map<string, string>();
    for (const m of text.matchAll(/([^{}@]+)\{([^{}]*)\}/g)) {
      for (const selector of m[1].split(",")) map.set(selector.trim(), `${map.get(selector.trim()) ?? ""};${m[2]}`);
    }
    return map;
  };
  return { phone: rules(clean.slice(at)), all: rules(clean) };
}

describe("flight cards on a phone (styles.css)", () => {
  const css = readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/styles.css"), "utf8");
  const { phone, all } = cssRules(css);

  it("never keep a whole price on one line", () => {
    for (const [selector, body] of all) {
      if (selector.includes("td.price")) expect(body, selector).not.toMatch(/white-space:\s*nowrap/);
    }
  });

  it("let every column shrink: no track wider than the card, cells that wrap", () => {
    const tracks = [...phone].filter(([s]) => /tbody tr$/.test(s)).map(([, body]) => /grid-template-columns:\s*([^;]+)/.exec(body)?.[1]);
    expect(tracks.length).toBeGreaterThan(0);
    for (const track of tracks) {
      expect(track).toBeDefined();
      // Each flexible track has a minimum of 0; the price column at most half the card.
      expect(track!.replace(/minmax\(0, 1fr\)/g, "")).not.toMatch(/\b1fr\b/);
      expect(track).toMatch(/fit-content\(50%\)$/);
    }
    expect(phone.get("table.flights td")).toMatch(/min-width:\s*0/);
    expect(phone.get("table.flights td")).toMatch(/overflow-wrap:\s*anywhere/);
  });
});
