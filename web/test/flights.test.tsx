import { render } from "preact";
import { afterEach, describe, expect, it } from "vitest";
import { FlightTable, type Flight } from "../src/components/FlightTable";
import { flightNotes, seenAgo } from "../src/flightNotes";

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
