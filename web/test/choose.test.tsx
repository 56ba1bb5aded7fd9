// Choose on a flight row: it sends "Option N" as if the user had typed it, the way a quick
// reply does; off while a turn runs, and in tables older than the chat's latest list.

import { render } from "preact";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Actions, type PageActions } from "../src/components/context";
import { type Flight, FlightTable } from "../src/components/FlightTable";
import { textsFor, Words } from "../src/i18n";
import { frame, json, never, page, type Seen, sse, tick, unmount } from "./harness";

const leg = {
  departure: { airport: "FRA", time: "2027-03-01T10:00" },
  arrival: { airport: "JFK", time: "2027-03-01T12:45" },
  duration: "8h 45m",
  stops: "Nonstop",
  flightNumbers: "LH400",
};

const row = (id: string, option: number | undefined, miles: number): Flight => ({
  id,
  option,
  provider: "seatsaero",
  price: `${miles} miles`,
  miles,
  airline: "LH",
  program: "Miles & More",
  outbound: leg,
});

const actions = (busy: boolean, send: (message: string) => void): PageActions => ({
  toolCall: () => Promise.reject(new Error("no audit here")),
  send,
  retry: () => undefined,
  decide: () => undefined,
  busy,
});

let root: HTMLElement | undefined;
function table(flights: Flight[], opts: { lang?: "en" | "de"; busy?: boolean; send?: (message: string) => void } = {}) {
  root = document.createElement("div");
  document.body.append(root);
  render(
    <Actions.Provider value={actions(opts.busy ?? false, opts.send ?? (() => undefined))}>
      <Words.Provider value={textsFor(opts.lang ?? "en")}>
        <FlightTable kind="award" flights={flights} />
      </Words.Provider>
    </Actions.Provider>,
    root,
  );
  return root;
}

/** The row's Choose, by its accessible name ("Choose flight 2"). */
const chooseButton = (el: HTMLElement, name: string) =>
  [...el.querySelectorAll<HTMLButtonElement>("button.choose")].find((b) => b.getAttribute("aria-label") === name);

afterEach(() => {
  if (root) render(null, root);
  root?.remove();
  root = undefined;
  unmount();
});

describe("Choose on a flight row", () => {
  it("sends 'Option 2' for row 2, whatever the table's order, with the flight in its accessible name", () => {
    const send = vi.fn();
    // Sorted by miles, row 2 comes first.
    const el = table([row("a", 1, 70000), row("b", 2, 55000)], { send });
    const buttons = [...el.querySelectorAll<HTMLButtonElement>("tbody button.choose")];
    expect(buttons.map((b) => b.getAttribute("aria-label"))).toEqual(["Choose flight 2", "Choose flight 1"]);
    expect(buttons.map((b) => b.textContent)).toEqual(["Choose", "Choose"]);
    // Beside the booking links, so it is on screen wherever Book is.
    expect(buttons.every((b) => b.closest("td")?.classList.contains("book"))).toBe(true);
    chooseButton(el, "Choose flight 2")!.click();
    expect(send).toHaveBeenCalledTimes(1);
    expect(send).toHaveBeenCalledWith("Option 2");
  });

  it("says Auswählen in a German turn, names the flight (Flug 2 auswählen) and sends 'Option 2' too", () => {
    const send = vi.fn();
    const el = table([row("a", 1, 70000), row("b", 2, 55000)], { lang: "de", send });
    const button = chooseButton(el, "Flug 2 auswählen");
    expect(button?.textContent).toBe("Auswählen");
    button!.click();
    expect(send).toHaveBeenCalledWith("Option 2");
  });

  it("is off while a turn is running, like the quick replies", () => {
    const send = vi.fn();
    const el = table([row("a", 1, 70000), row("b", 2, 55000)], { busy: true, send });
    const buttons = [...el.querySelectorAll<HTMLButtonElement>("button.choose")];
    expect(buttons).toHaveLength(2);
    expect(buttons.every((b) => b.disabled)).toBe(true);
    chooseButton(el, "Choose flight 2")!.click();
    expect(send).not.toHaveBeenCalled();
  });

  it("is not on rows without a number, nor in tables without numbers", () => {
    const el = table([row("a", 1, 70000), row("u", undefined, 50000)]);
    const rows = [...el.querySelectorAll("tbody tr")];
    expect(rows).toHaveLength(2);
    // The unnumbered row sorts first (fewer miles): no Choose there, one in the other.
    expect(rows[0].querySelector("button.choose")).toBeNull();
    expect(rows[1].querySelector("button.choose")?.getAttribute("aria-label")).toBe("Choose flight 1");
    render(null, root!);
    root!.remove();
    const old = table([row("c", undefined, 60000), row("d", undefined, 65000)]);
    expect(old.querySelector("button.choose")).toBeNull();
    expect(old.querySelector("td.book")?.textContent).toBe("—");
  });
});

/** A search turn's events: its flights (award 1 and 2, a cash fare 3 and one without a
 * number), then, when `open` is false, its answer and `done`. */
function searchEvents(turn: string, first: number) {
  const award = [row(`${turn}-a`, first, 70000), row(`${turn}-b`, first + 1, 55000)];
  const cash = [
    { id: `${turn}-c`, option: first + 2, provider: "duffel", price: "€1,200.00", airline: "LH", outbound: leg },
    { id: `${turn}-d`, provider: "duffel", price: "€1,500.00", airline: "LH", outbound: leg },
  ];
  return [
    frame(0, "init", { chat_id: "c1", created: turn === "t1", turn_id: turn }),
    frame(1, "tool_started", { tool: "search_flights", job_id: `tc_${turn}`, deduped: false, status: "running" }),
    frame(2, "tool_result", {
      tool: "search_flights",
      job_id: `tc_${turn}`,
      status: "succeeded",
      metadata: {},
      result: { seatsResult: { success: true, results: { flights: award } }, cashResult: { success: true, results: { flights: cash } } },
    }),
  ];
}
const answer = (text: string) => [
  frame(3, "final", { message: { role: "assistant", content: text }, session_state: {}, tool_result: null }),
  frame(4, "done", {}),
];

/** A response whose event stream the test writes and ends. */
function openStream() {
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  return {
    response: new Response(body, { headers: { "content-type": "text/event-stream" } }),
    write: (...frames: string[]) => controller.enqueue(encoder.encode(frames.join(""))),
    end: () => controller.close(),
  };
}

describe("Choose in the chat", () => {
  it("sends 'Option 2' as the next turn's message, once the search's turn has ended", async () => {
    const search = openStream();
    const bodies: string[] = [];
    const p = page(async (req: Seen, init) => {
      if (req.path.startsWith("/chats?")) return json({ items: [] });
      if (req.method === "POST" && req.path === "/chat") {
        bodies.push(req.body ?? "");
        if (bodies.length === 1) return search.response;
        return sse(frame(0, "init", { chat_id: "c1", created: false, turn_id: "t2" }), ...answer("You picked option 2: LH."));
      }
      return never(init);
    });
    await p.send("Business class from Frankfurt to New York on 1 March");
    search.write(...searchEvents("t1", 1));
    await vi.waitFor(() => expect(p.el.querySelectorAll(".live button.choose")).toHaveLength(3));
    const choose = () => [...p.el.querySelectorAll<HTMLButtonElement>(".live button.choose")].find((b) => b.getAttribute("aria-label") === "Choose flight 2")!;
    // The turn still streams: no choosing yet.
    expect(choose().disabled).toBe(true);
    choose().click();
    await tick();
    expect(p.posts()).toHaveLength(1);

    search.write(...answer("Two award flights and a fare."));
    search.end();
    await vi.waitFor(() => expect(choose().disabled).toBe(false));
    // The unnumbered cash fare has none: 1 and 2 (award) and 3 (cash).
    expect([...p.el.querySelectorAll(".live button.choose")].map((b) => b.getAttribute("aria-label")).sort()).toEqual([
      "Choose flight 1",
      "Choose flight 2",
      "Choose flight 3",
    ]);
    choose().click();
    await vi.waitFor(() => expect(p.posts()).toHaveLength(2));
    expect(JSON.parse(bodies[1])).toMatchObject({ message: "Option 2", chat_id: "c1" });
    // Shown as the user's message of a new turn, as a typed one is.
    await vi.waitFor(() => expect(p.turns()).toHaveLength(2));
    expect(p.turns()[1].querySelector(".msg.user p")?.textContent).toBe("Option 2");
    await vi.waitFor(() => expect(p.turns()[1].getAttribute("data-phase")).toBe("done"));
    expect(p.box().value).toBe(""); // nothing was put into the box
    // The list is still the chat's latest: another row may be chosen after the pick.
    expect(choose().disabled).toBe(false);
  });

  it("is off in an older search's table once a newer list is shown (the router picks from the last one)", async () => {
    let n = 0;
    const p = page(async (req, init) => {
      if (req.path.startsWith("/chats?")) return json({ items: [] });
      if (req.method === "POST" && req.path === "/chat") {
        n += 1;
        return sse(...searchEvents(`t${n}`, 1), ...answer(`Search ${n}.`));
      }
      return never(init);
    });
    await p.send("Business class from Frankfurt to New York on 1 March");
    await vi.waitFor(() => expect(p.turns()[0]?.getAttribute("data-phase")).toBe("done"));
    const buttons = (turn: number) => [...p.turns()[turn].querySelectorAll<HTMLButtonElement>("button.choose")];
    expect(buttons(0).every((b) => !b.disabled)).toBe(true);
    await p.send("And a day later?");
    await vi.waitFor(() => expect(p.turns()[1]?.getAttribute("data-phase")).toBe("done"));
    expect(buttons(0)).toHaveLength(3);
    expect(buttons(0).every((b) => b.disabled)).toBe(true);
    expect(buttons(1).every((b) => !b.disabled)).toBe(true);
  });
});
