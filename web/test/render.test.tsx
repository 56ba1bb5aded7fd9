import { render } from "preact";
import { afterEach, describe, expect, it } from "vitest";
import type { StoredMessage, ToolCallRecord } from "../src/api";
import { Blocks } from "../src/components/Blocks";
import { ChatRow } from "../src/components/ChatRow";
import { Actions } from "../src/components/context";
import { Debug, textsFor, Words } from "../src/i18n";
import type { Block } from "../src/reducer";
import { FlightResults } from "../src/components/FlightTable";
import { durationMinutes, parseAmount } from "../src/format";
import { historyBlocks } from "../src/history";
import { LinkPolicy } from "../src/links";
import { Links, Markdown } from "../src/markdown";

let root: HTMLElement;
function mount(node: preact.ComponentChild): HTMLElement {
  root = document.createElement("div");
  document.body.append(root);
  render(node, root);
  return root;
}
afterEach(() => {
  render(null, root);
  root.remove();
});

describe("Markdown", () => {
  it("renders the answers' markup", () => {
    const el = mount(<Markdown text={"**Award flights (miles)**\n1. TK: 70,000 miles\n2. LH: *80,000*\n\nSee `code` and [the site](https://seats.aero/a?b=1)."} />);
    expect(el.querySelector("strong")?.textContent).toBe("Award flights (miles)");
    expect([...el.querySelectorAll("ol li")].map((li) => li.textContent)).toEqual(["TK: 70,000 miles", "LH: 80,000"]);
    expect(el.querySelector("em")?.textContent).toBe("80,000");
    expect(el.querySelector("code")?.textContent).toBe("code");
    const a = el.querySelector("a")!;
    expect(a.href).toBe("https://seats.aero/a?b=1");
    expect(a.rel).toBe("noopener noreferrer");
    expect(a.target).toBe("_blank");
  });

  it("never makes markup or script from the text", () => {
    const hostile =
      '<img src=x onerror="alert(1)"> <script>alert(2)</script> [click](javascript:alert(3)) ' +
      "[data](data:text/html,<b>x</b>) <https://ok.example/> **<b>bold</b>**";
    const el = mount(
      <Links.Provider value={new LinkPolicy(["ok.example"])}>
        <Markdown text={hostile} />
      </Links.Provider>,
    );
    expect(el.querySelector("img, script, b")).toBeNull();
    const links = [...el.querySelectorAll("a")].map((a) => a.getAttribute("href"));
    expect(links).toEqual(["https://ok.example/"]);
    expect(el.textContent).toContain('<img src=x onerror="alert(1)">');
    expect(el.textContent).toContain("click");
  });

  it("accepts only https links to listed hosts", () => {
    const links = new LinkPolicy([".example"]);
    expect(links.href("https://a.example/x")).toBe("https://a.example/x");
    expect(links.href("http://a.example")).toBeNull();
    expect(links.href("javascript:alert(1)")).toBeNull();
    expect(links.href("  JaVaScRiPt:alert(1)")).toBeNull();
    expect(links.href("/relative")).toBeNull();
    expect(links.href("mailto:x@example.com")).toBeNull();
  });

  it("keeps snake_case words and renders headings below the page's own", () => {
    const el = mount(<Markdown text={"# Title\nuse search_flights_now please"} />);
    expect(el.querySelector("h3")?.textContent).toBe("Title");
    expect(el.querySelector("em")).toBeNull();
  });
});

const flight = (over: Record<string, unknown>) => ({
  provider: "seatsaero",
  cabin: "Business",
  outbound: { departure: { airport: "FRA", time: "2027-03-15T14:00" }, arrival: { airport: "JFK", time: "2027-03-15T17:10" }, duration: "9h 10m", stops: "Nonstop", flightNumbers: "TK1" },
  ...over,
});

describe("FlightResults", () => {
  const result = {
    seatsResult: {
      success: true,
      results: {
        flights: [
          flight({ id: "1", airline: "TK", miles: 70000, totalStops: 0, price: "70,000 miles + $41.74", bookingLinks: { Turkish: "https://www.turkishairlines.com/x", Bad: "javascript:alert(1)" } }),
          flight({ id: "2", airline: "LH", miles: 55000, totalStops: 1, price: "55,000 miles + $200", outbound: { ...flight({}).outbound, duration: "11h 5m", stops: "1 stop" } }),
        ],
      },
    },
    cashResult: { success: true, results: { flights: [flight({ id: "3", provider: "amadeus", airline: "UA", price: "$1,234.50", totalStops: 0 })] } },
  };

  it("shows award and cash tables, sorted by price, and re-sorts on a header", () => {
    const el = mount(<FlightResults result={result} />);
    const award = el.querySelector('table[data-kind="award"]')!;
    const carriers = () => [...award.querySelectorAll("tbody tr td.carrier strong")].map((s) => s.textContent);
    expect(carriers()).toEqual(["LH", "TK"]);
    expect(award.querySelector('th[aria-sort="ascending"]')?.textContent).toContain("Miles");
    (award.querySelector('button[data-sort="duration"]') as HTMLButtonElement).click();
    return Promise.resolve().then(async () => {
      await new Promise((r) => setTimeout(r, 0));
      expect(carriers()).toEqual(["TK", "LH"]);
      expect(el.querySelector('table[data-kind="cash"] tbody tr')?.textContent).toContain("$1,234.50");
      const links = [...award.querySelectorAll("a")];
      expect(links.map((a) => a.textContent)).toEqual(["Turkish"]);
      expect(links[0].rel).toBe("noopener noreferrer");
    });
  });

  it("parses amounts and durations for sorting", () => {
    expect(parseAmount("$1,234.50")).toBe(1234.5);
    expect(parseAmount("1.234,50 €")).toBe(1234.5);
    expect(parseAmount("€ 980")).toBe(980);
    expect(durationMinutes("9h 10m")).toBe(550);
    expect(durationMinutes("11 Std. 5 Min.")).toBe(665);
    expect(durationMinutes(undefined)).toBe(Infinity);
  });
});

describe("a reloaded chat", () => {
  const at = (s: number) => new Date(Date.UTC(2027, 0, 1, 12, 0, s)).toISOString();
  const messages: StoredMessage[] = [
    { id: "m0", chat_id: "c", seq: 0, role: "user", content: "Flights FRA JFK", created_at: at(0) },
    { id: "m1", chat_id: "c", seq: 1, role: "assistant", content: "", created_at: at(1), tool_calls: [{ id: "x", name: "search_flights", arguments: "{}" }] },
    { id: "m2", chat_id: "c", seq: 2, role: "tool", content: "…", created_at: at(2), tool_call_id: "x", ledger_call_id: "tc_1" },
    { id: "m3", chat_id: "c", seq: 3, role: "assistant", content: "Here **they** are.", created_at: at(3), ui: [{ kind: "quick_replies", payload: { replies: ["More"] } }] },
    { id: "m4", chat_id: "c", seq: 4, role: "user", content: "How do upgrades work?", created_at: at(4) },
    { id: "m5", chat_id: "c", seq: 5, role: "tool", content: "…", created_at: at(5), ledger_call_id: "tc_2" },
    { id: "m6", chat_id: "c", seq: 6, role: "assistant", content: "Like this.", created_at: at(6) },
  ];
  const record = (id: string, tool: string, over: Partial<ToolCallRecord>): ToolCallRecord => ({
    id, chat_id: "c", tool, status: "succeeded", attempt: 1, request: { q: id }, created_at: at(0), updated_at: at(0),
    started_at: at(1), finished_at: new Date(Date.UTC(2027, 0, 1, 12, 0, 2, 250)).toISOString(), ...over,
  });
  const records = new Map([
    ["tc_1", record("tc_1", "search_flights", { response: { raw: { seatsResult: { results: { flights: [flight({ id: "9", airline: "TK", miles: 1 })] } } }, metadata: { mode: "flights" } } })],
    ["tc_2", record("tc_2", "search_knowledge_base", { response: { metadata: { sources: [
      { id: "s#1", document_id: "status-und-upgrades", title: "Status und Upgrades", section: "Upgrades mit Meilen", lang: "de", snippet: "Viele Programme erlauben es" },
      { id: "s#2", document_id: "status-und-upgrades", title: "Status und Upgrades", section: "Upgrade-Gebote", lang: "de", snippet: "Einige Airlines" },
      { id: "o#0", document_id: "stopovers-and-open-jaws", snippet: "Two routing features" },
    ] } } })],
  ]);

  it("shows the stored messages, tool cards with results and durations, sources and quick replies", () => {
    const blocks = historyBlocks(messages, records);
    expect(blocks.map((b) => b.kind)).toEqual(["user", "tool", "text", "quick_replies", "user", "tool", "text"]);
    const el = mount(<Blocks blocks={blocks} chatId="c" latest />);
    const cards = [...el.querySelectorAll(".tool-card")];
    expect(cards.map((c) => c.getAttribute("data-status"))).toEqual(["succeeded", "succeeded"]);
    expect(cards[0].querySelector(".duration")?.textContent).toBe("1.3 s");
    expect(cards[0].querySelector("table")).not.toBeNull();
    // Sources by document, with titles (never the document id) and where a source's
    // language is not the page's, a word on it; an older record's id written as words.
    const sources = [...cards[1].querySelectorAll(".sources li")].map((li) => li.textContent);
    expect(sources).toEqual([
      "Status und Upgrades › Upgrades mit Meilen · Upgrade-Gebote (in German) — Viele Programme erlauben es",
      "Stopovers and open jaws — Two routing features",
    ]);
    expect(cards[1].querySelector(".sources")?.textContent).not.toContain("status-und-upgrades");
    expect(el.querySelector(".quick-replies button")?.textContent).toBe("More");
    expect(el.querySelector(".md strong")?.textContent).toBe("they");
    expect(el.querySelector(".stopped-note")).toBeNull();
  });

  it("marks an answer the user stopped, without an error", () => {
    const stopped: StoredMessage = { id: "m7", chat_id: "c", seq: 7, role: "assistant", content: "Once upon", created_at: at(7), stopped: true };
    const el = mount(<Blocks blocks={historyBlocks([stopped], records)} chatId="c" latest />);
    expect(el.querySelector(".msg.assistant .md")?.textContent).toBe("Once upon");
    expect(el.querySelector(".msg.assistant .stopped-note")?.textContent).toBe("Stopped");
    expect(el.querySelector('[role="alert"]')).toBeNull();
  });
});

describe("an error block", () => {
  const error: Block = { kind: "error", key: "e", code: "llm_error", message: "The assistant is unavailable." };

  it("says what happened in plain words with a retry button; the code is for the debug view", () => {
    const el = mount(<Blocks blocks={[error]} turnKey="k" latest />);
    const alert = el.querySelector('[role="alert"]')!;
    expect(alert.textContent).toContain("The assistant could not be reached.");
    expect(alert.textContent).not.toContain("llm_error");
    expect(alert.getAttribute("data-code")).toBe("llm_error");
    expect(el.querySelector("button.retry")?.textContent).toBe("Retry");
  });

  it("shows the code in the debug view", () => {
    const el = mount(
      <Debug.Provider value={true}>
        <Blocks blocks={[error]} turnKey="k" latest />
      </Debug.Provider>,
    );
    expect(el.querySelector(".error-box code")?.textContent).toBe("llm_error");
  });
});

describe("a turn in German", () => {
  const flights = {
    seatsResult: {
      success: true,
      results: {
        flights: [
          { id: "a", provider: "seatsaero", program: "Miles & More", airline: "LH", miles: 70000, price: "70.000 Meilen + 41,74 $", seatsLeft: 2, outbound: { stops: "Nonstop" } },
        ],
      },
    },
  };
  const card: Block = {
    kind: "tool",
    key: "c",
    card: { jobId: "tc_1", tool: "search_flights", phase: "deduplicated", status: "succeeded", deduped: true, metadata: { cached: true }, result: flights, durationMs: 1500 },
  };
  const external: Block = {
    kind: "tool",
    key: "x",
    card: { jobId: null, tool: "fare_notes__lookup_fare_note", phase: "failed", status: "rejected", deduped: false, metadata: { reason: "invalid_arguments", message: "[rejected] Invalid arguments" } },
  };

  it("labels cards, tables and notes in German, with no internal words", () => {
    const el = mount(
      <Words.Provider value={textsFor("de")}>
        <Blocks blocks={[card, external, { kind: "text", key: "s", text: "Teil", stopped: true }]} latest />
      </Words.Provider>,
    );
    const text = el.textContent ?? "";
    expect(el.querySelector(".tool-card .badge")?.textContent).toBe("Fertig");
    expect(el.querySelector(".tool-card .tool-name")?.textContent).toBe("Flugsuche");
    expect(el.querySelector(".tool-card .duration")?.textContent).toBe("1,5 s");
    expect(el.querySelector("table.flights caption")?.textContent).toContain("Prämienflüge (Meilen)");
    expect([...el.querySelectorAll("table.flights thead th")].map((th) => th.textContent?.replace(/[▲▼ ]+$/, ""))).toEqual([
      "Programm",
      "Airline",
      "Strecke",
      "Dauer",
      "Stopps",
      "Meilen",
      "Buchen",
      "Hinweise",
    ]);
    expect(el.querySelector("td.notes")?.textContent).toContain("2 Plätze");
    expect(el.querySelectorAll(".tool-card")[1].querySelector(".tool-error")?.textContent).toBe("Dieser Schritt wurde übersprungen.");
    expect(el.querySelector(".stopped-note")?.textContent).toBe("Angehalten");
    for (const internal of ["succeeded", "deduplicated", "cached", "rejected", "invalid_arguments", "fare_notes__", "tc_1", "Arguments"]) {
      expect(text).not.toContain(internal);
    }
  });

  it("shows the router's words, ids and arguments in the debug view", () => {
    const el = mount(
      <Debug.Provider value={true}>
        <Blocks blocks={[card, external]} latest />
      </Debug.Provider>,
    );
    const text = el.textContent ?? "";
    for (const internal of ["deduplicated", "cached", "tc_1", "rejected: [rejected] Invalid arguments", "Arguments"]) {
      expect(text).toContain(internal);
    }
  });
});

describe("chat management", () => {
  const chat = { chat_id: "c1", title: "Lounges in Tokyo", message_count: 4, created_at: "2026-01-01T00:00:00Z", active_at: new Date().toISOString() };
  const flush = () => new Promise((r) => setTimeout(r, 0));

  it("renames the open chat inline: Enter saves the trimmed title, Escape cancels", async () => {
    const renamed: string[] = [];
    const el = mount(<ChatRow chat={chat} current onRename={async (t) => void renamed.push(t)} onDelete={async () => undefined} />);
    const click = (name: string) => [...el.querySelectorAll("button")].find((b) => b.textContent === name)!.click();
    click("Rename");
    await flush();
    const input = el.querySelector<HTMLInputElement>("input.rename-input")!;
    expect(input.value).toBe("Lounges in Tokyo");
    input.value = "  Tokyo in May ";
    input.dispatchEvent(new Event("input", { bubbles: true }));
    await flush();
    el.querySelector("form")!.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true }));
    await flush();
    expect(renamed).toEqual(["Tokyo in May"]);
    click("Rename");
    await flush();
    el.querySelector("input.rename-input")!.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    await flush();
    expect(el.querySelector("input.rename-input")).toBeNull();
    expect(renamed).toHaveLength(1);
  });

  it("deletes only after a second, explicit Delete, and says so when it fails", async () => {
    let deletes = 0;
    const el = mount(
      <ChatRow
        chat={chat}
        current
        onRename={async () => undefined}
        onDelete={async () => {
          deletes++;
          throw new TypeError("Failed to fetch");
        }}
      />,
    );
    [...el.querySelectorAll("button")].find((b) => b.textContent === "Delete")!.click();
    await flush();
    expect(deletes).toBe(0);
    expect(el.querySelector('[role="group"]')?.textContent).toContain("Delete this chat for good?");
    el.querySelector<HTMLButtonElement>('[role="group"] button.danger')!.click();
    await flush();
    await flush();
    expect(deletes).toBe(1);
    expect(el.querySelector('[role="alert"]')?.textContent).toBe("That did not work: The connection to the server was lost.");
  });

  it("offers no actions on a chat that is not open; an untitled chat is a New chat", () => {
    const el = mount(<ChatRow chat={{ ...chat, title: undefined }} current={false} onRename={async () => undefined} onDelete={async () => undefined} />);
    expect(el.querySelectorAll("button")).toHaveLength(0);
    expect(el.querySelector(".title")?.textContent).toBe("New chat");
  });

  it("regenerates the latest answer by asking its question again", () => {
    const sent: string[] = [];
    const actions = { toolCall: () => Promise.reject(new Error("none")), send: (m: string) => void sent.push(m), retry: () => undefined, decide: () => undefined, busy: false };
    const blocks: Block[] = [
      { kind: "user", key: "u", text: "How do upgrades work?" },
      { kind: "text", key: "a", text: "Like this." },
    ];
    const el = mount(
      <Actions.Provider value={actions}>
        <Blocks blocks={blocks} latest />
        <Blocks blocks={blocks} />
      </Actions.Provider>,
    );
    const buttons = el.querySelectorAll<HTMLButtonElement>("button.regenerate");
    expect(buttons).toHaveLength(1); // the latest turn only
    buttons[0].click();
    expect(sent).toEqual(["How do upgrades work?"]);
  });
});

describe("UI skills", () => {
  const card = (phase: "succeeded" | "failed"): Block => ({
    kind: "tool",
    key: `r-${phase}`,
    card: { jobId: "tc_2", tool: "suggest_replies", phase, status: phase, deduped: false, metadata: {} },
  });
  const replies: Block = { kind: "quick_replies", key: "q", replies: ["In first class?"] };

  it("show their replies, not a card for the call, unless it failed or in the debug view", () => {
    expect(mount(<Blocks blocks={[card("succeeded"), replies]} latest />).querySelectorAll(".tool-card")).toHaveLength(0);
    render(null, root);
    root.remove();
    expect(mount(<Blocks blocks={[card("failed")]} latest />).querySelectorAll(".tool-card")).toHaveLength(1);
    render(null, root);
    root.remove();
    const debug = mount(
      <Debug.Provider value={true}>
        <Blocks blocks={[card("succeeded"), replies]} latest />
      </Debug.Provider>,
    );
    expect(debug.querySelectorAll(".tool-card")).toHaveLength(1);
    expect(debug.querySelector(".quick-replies button")?.textContent).toBe("In first class?");
  });
});
