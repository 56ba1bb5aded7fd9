import { afterEach, describe, expect, it, vi } from "vitest";
import type { FareAlert } from "../src/api";
import { json, never, page, refusal, tick, unmount } from "./harness";

afterEach(unmount);

const alert = (over: Partial<FareAlert> = {}): FareAlert => ({
  id: "01JDALERT0000000000000000A",
  origin: "FRA",
  destination: "JFK",
  date_from: "2027-03-01",
  date_to: "2027-03-15",
  cabin: "BUSINESS",
  max_miles: 80000,
  created_at: "2026-11-23T17:40:02Z",
  last_checked_at: new Date(Date.now() - 5 * 60_000).toISOString(),
  next_check_at: "2026-11-23T18:59:04Z",
  matches: [
    {
      key: "5f0c",
      found_at: new Date(Date.now() - 3 * 3600_000).toISOString(),
      flight: {
        provider: "seatsaero", airline: "TK", flight_numbers: "TK184", date: "2027-03-03",
        departure: { airport: "FRA", time: "2027-03-03T14:00" }, arrival: { airport: "JFK", time: "2027-03-04T10:10" },
        stops: 0, cabin: "Business", price: "70,000 miles + $41.74", miles: 70000, taxes: { amount: 41.74, currency: "USD" },
      },
    },
  ],
  ...over,
});
const cash = alert({
  id: "01JDALERT0000000000000000B", origin: "MUC", destination: "ORD", cabin: "ECONOMY", max_miles: null,
  max_price: { amount: 450, currency: "EUR" }, last_checked_at: null, next_check_at: null, matches: [],
});

/** The page with the router's alerts; `onDelete` answers `DELETE /alerts/{id}`. */
function withAlerts(alerts: FareAlert[], lang: "en" | "de" = "en", onDelete: () => Promise<Response> = async () => json(null, 204)) {
  return page(async (req, init) => {
    if (req.path.startsWith("/chats?")) return json({ items: [] });
    if (req.method === "GET" && req.path === "/alerts") return json({ alerts });
    if (req.method === "DELETE" && req.path.startsWith("/alerts/")) return onDelete();
    return never(init);
  }, lang);
}

const open = async (p: ReturnType<typeof page>, label: string) => {
  // The page is up: it asked for the chat list.
  await vi.waitFor(() => expect(p.seen.some((s) => s.path.startsWith("/chats?"))).toBe(true));
  const button = [...p.el.querySelectorAll<HTMLButtonElement>("header.top button")].find((b) => b.textContent === label)!;
  expect(button.getAttribute("aria-expanded")).toBe("false");
  button.click();
  await tick();
  expect(button.getAttribute("aria-expanded")).toBe("true");
  return button;
};

describe("the fare alerts panel", () => {
  it("opens from the top bar and lists each alert: route, dates, class, limit, checks and what it found", async () => {
    const p = withAlerts([alert(), cash]);
    await open(p, "Fare alerts");
    await vi.waitFor(() => expect(p.el.querySelectorAll(".alert-item")).toHaveLength(2));
    expect(p.seen.some((s) => s.method === "GET" && s.path === "/alerts")).toBe(true);
    expect(p.el.querySelector("main")?.getAttribute("aria-labelledby")).toBe("alerts-title");
    expect(p.el.querySelector("#alerts-title")?.textContent).toBe("Fare alerts");
    expect(document.activeElement?.id).toBe("alerts-title"); // the panel took the focus
    expect(p.el.querySelector<HTMLElement>(".conversation")!.hidden).toBe(true);
    const [first, second] = [...p.el.querySelectorAll<HTMLElement>(".alert-item")];
    expect(first.querySelector("article")?.getAttribute("aria-label")).toBe("Fare alert FRA → JFK");
    expect(first.querySelector(".alert-route")?.textContent).toBe("FRA → JFK");
    expect(first.querySelector(".alert-terms")?.textContent).toMatch(/^1\s?–\s?15 Mar 2027 · Business · at most 80,000 miles$/);
    expect(first.querySelector(".alert-checks")?.textContent).toMatch(/^Last checked 5 min ago\. Next check 23 Nov 2026, \d\d:\d\d\.$/);
    expect(first.querySelector(".alert-found")?.textContent).toBe("Found 1 flight:");
    expect(first.querySelector(".alert-matches li")?.textContent).toBe("TK TK184 · 3 Mar 2027 · FRA → JFK · 70,000 miles + $41.74 found 3 h ago");
    expect(second.querySelector(".alert-terms")?.textContent).toMatch(/^1\s?–\s?15 Mar 2027 · Economy · at most €450\.00$/);
    expect(second.querySelector(".alert-checks")?.textContent).toBe("Not checked yet. No longer checked: its dates have passed.");
    expect(second.querySelector(".alert-found")?.textContent).toBe("Nothing found yet.");
    // Back to the chat.
    [...p.el.querySelectorAll<HTMLButtonElement>("button")].find((b) => b.textContent === "Back to the chat")!.click();
    await tick();
    expect(p.el.querySelector(".alerts-panel")).toBeNull();
    expect(p.el.querySelector<HTMLElement>(".conversation")!.hidden).toBe(false);
  });

  it("speaks German on a German page", async () => {
    const p = withAlerts([alert(), cash], "de");
    await open(p, "Preisalarme");
    await vi.waitFor(() => expect(p.el.querySelectorAll(".alert-item")).toHaveLength(2));
    const [first, second] = [...p.el.querySelectorAll<HTMLElement>(".alert-item")];
    expect(first.querySelector(".alert-terms")?.textContent).toMatch(/^1\.\s?–\s?15\. März 2027 · Business · höchstens 80\.000 Meilen$/);
    expect(first.querySelector(".alert-checks")?.textContent).toMatch(/^Zuletzt geprüft vor 5 Min\. Nächste Prüfung 23\.11\.2026, \d\d:\d\d\.$/);
    expect(first.querySelector(".alert-found")?.textContent).toBe("1 Flug gefunden:");
    expect(first.querySelector(".alert-matches li")?.textContent).toContain("3. März 2027");
    expect(first.querySelector(".alert-matches li")?.textContent).toContain("gefunden vor 3 Std.");
    expect(second.querySelector(".alert-terms")?.textContent).toMatch(/^1\.\s?–\s?15\. März 2027 · Economy · höchstens 450,00\s€$/);
    expect(second.querySelector(".alert-checks")?.textContent).toBe("Noch nicht geprüft. Wird nicht mehr geprüft: Die Reisedaten sind vorbei.");
    expect(first.querySelector("button.delete-alert")?.textContent).toBe("Löschen");
  });

  it("deletes an alert only after a second, explicit Delete", async () => {
    const p = withAlerts([alert()]);
    await open(p, "Fare alerts");
    await vi.waitFor(() => expect(p.el.querySelectorAll(".alert-item")).toHaveLength(1));
    p.el.querySelector<HTMLButtonElement>(".alert-item button.delete-alert")!.click();
    await tick();
    const confirm = p.el.querySelector('.alert-item [role="group"]')!;
    expect(confirm.getAttribute("aria-label")).toBe("Delete this fare alert?");
    expect(p.seen.filter((s) => s.method === "DELETE")).toHaveLength(0);
    // Cancel keeps it; Delete, asked again, deletes it.
    [...confirm.querySelectorAll("button")].find((b) => b.textContent === "Cancel")!.click();
    await tick();
    expect(p.el.querySelector('.alert-item [role="group"]')).toBeNull();
    p.el.querySelector<HTMLButtonElement>(".alert-item button.delete-alert")!.click();
    await tick();
    p.el.querySelector<HTMLButtonElement>('.alert-item [role="group"] button.danger')!.click();
    await vi.waitFor(() => expect(p.el.querySelectorAll(".alert-item")).toHaveLength(0));
    expect(p.seen.filter((s) => s.method === "DELETE").map((s) => s.path)).toEqual(["/alerts/01JDALERT0000000000000000A"]);
    expect(p.el.querySelector(".empty-alerts")?.textContent).toContain("No fare alerts yet.");
  });

  it("says in the page's language when deleting or loading fails, with Retry for the list", async () => {
    let listFails = true;
    const p = page(async (req, init) => {
      if (req.path.startsWith("/chats?")) return json({ items: [] });
      if (req.method === "GET" && req.path === "/alerts")
        return listFails ? refusal(500, "internal", "storage failure: table not found") : json({ alerts: [alert()] });
      if (req.method === "DELETE") return refusal(502, "upstream_error", "JWKS down");
      return never(init);
    }, "de");
    await open(p, "Preisalarme");
    await vi.waitFor(() => expect(p.el.querySelector(".alerts-error")).not.toBeNull());
    const error = p.el.querySelector(".alerts-error")!;
    expect(error.textContent).toContain("Die Preisalarme konnten nicht geladen werden.");
    expect(error.textContent).toContain("Auf dem Server ist etwas schiefgegangen.");
    expect(error.textContent).not.toContain("storage failure");
    listFails = false;
    error.querySelector<HTMLButtonElement>("button.retry")!.click();
    await vi.waitFor(() => expect(p.el.querySelectorAll(".alert-item")).toHaveLength(1));
    p.el.querySelector<HTMLButtonElement>(".alert-item button.delete-alert")!.click();
    await tick();
    p.el.querySelector<HTMLButtonElement>('.alert-item [role="group"] button.danger')!.click();
    await vi.waitFor(() => expect(p.el.querySelector('.alert-item [role="alert"]')).not.toBeNull());
    expect(p.el.querySelector('.alert-item [role="alert"]')?.textContent).toBe(
      "Das hat nicht geklappt: Ein Dienst, den der Chat braucht, ist nicht erreichbar.",
    );
    expect(p.el.querySelectorAll(".alert-item")).toHaveLength(1);
  });

  it("takes an alert deleted elsewhere (404) as deleted", async () => {
    const p = withAlerts([alert()], "en", async () => refusal(404, "not_found", "alert not found"));
    await open(p, "Fare alerts");
    await vi.waitFor(() => expect(p.el.querySelectorAll(".alert-item")).toHaveLength(1));
    p.el.querySelector<HTMLButtonElement>(".alert-item button.delete-alert")!.click();
    await tick();
    p.el.querySelector<HTMLButtonElement>('.alert-item [role="group"] button.danger')!.click();
    await vi.waitFor(() => expect(p.el.querySelectorAll(".alert-item")).toHaveLength(0));
    expect(p.el.querySelector('[role="alert"]')).toBeNull();
  });
});
