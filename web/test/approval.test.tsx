import { afterEach, describe, expect, it, vi } from "vitest";
import type { StoredMessage, ToolCallRecord } from "../src/api";
import type { RouterEvent } from "../src/events";
import { newTurn, reduce, settleCalls, type Block, type TurnView } from "../src/reducer";
import { frame, json, never, page, sse, unmount } from "./harness";

afterEach(unmount);

const request = {
  job_id: "tc_9",
  tool: "create_fare_alert",
  arguments: { origin: "FRA", destination: "JFK", date_from: "2027-03-01", date_to: "2027-03-31", cabin: "BUSINESS", max_miles: 60000 },
  summary: "Fare alert FRA → JFK, 1–31 Mar 2027, Business, at most 60,000 miles",
  expires_at: "2027-01-02T00:00:00Z",
};
const words = {
  en: { ask: "Alert me when FRA to JFK in March drops below 60,000 miles", question: "Shall I set this fare alert?", answer: "OK, I did not create the alert." },
  de: { ask: "Sag Bescheid, wenn FRA nach JFK im März unter 60.000 Meilen fällt", question: "Soll ich diesen Preisalarm anlegen?", answer: "Gut, ich habe keinen Alarm angelegt." },
};

/** The router's streams: the turn that asks for approval, then the denial's turn. */
function asking(lang: "en" | "de") {
  return sse(
    frame(0, "init", { chat_id: "c1", created: true, turn_id: "t1", language: lang }),
    frame(1, "tool_result", { tool: "create_fare_alert", job_id: "tc_9", status: "awaiting_approval", metadata: { approval: true }, result: request }),
    frame(2, "approval_required", request),
    frame(3, "assistant_token", { content: words[lang].question }),
    frame(4, "final", { message: { role: "assistant", content: words[lang].question }, session_state: {}, tool_result: null }),
    frame(5, "done", {}),
  );
}
function denied(lang: "en" | "de") {
  return sse(
    frame(0, "init", { chat_id: "c1", created: false, turn_id: "t2", language: lang }),
    frame(1, "tool_result", { tool: "create_fare_alert", job_id: "tc_9", status: "canceled", metadata: { denied: true }, result: null }),
    frame(2, "assistant_token", { content: words[lang].answer }),
    frame(3, "final", { message: { role: "assistant", content: words[lang].answer }, session_state: {}, tool_result: null }),
    frame(4, "done", {}),
  );
}

/** The same chat as stored: its messages (newest first, as the API pages them) and the call's
 * audit record. */
function stored(lang: "en" | "de"): { messages: StoredMessage[]; records: ToolCallRecord[] } {
  const at = (s: number) => new Date(Date.UTC(2027, 0, 1, 12, 0, s)).toISOString();
  const m = (seq: number, over: Partial<StoredMessage>): StoredMessage => ({ id: `m${seq}`, chat_id: "c1", seq, role: "assistant", content: "", created_at: at(seq), ...over });
  const messages = [
    m(0, { role: "user", content: words[lang].ask }),
    m(1, { tool_calls: [{ id: "call_1", name: "create_fare_alert", arguments: JSON.stringify(request.arguments) }] }),
    m(2, { role: "tool", content: "[awaiting approval]", tool_call_id: "call_1", ledger_call_id: "tc_9" }),
    m(3, { content: words[lang].question, language: lang, ui: [{ kind: "approval", payload: request }] }),
    m(4, { role: "tool", content: "[denied]", tool_call_id: "call_1", ledger_call_id: "tc_9" }),
    m(5, { content: words[lang].answer, language: lang }),
  ].reverse();
  const records: ToolCallRecord[] = [
    {
      id: "tc_9", chat_id: "c1", tool: "create_fare_alert", status: "canceled", attempt: 1, request: request.arguments,
      response: null, error: "denied by the user", created_at: at(1), updated_at: at(4),
      approval: { summary: request.summary, expires_at: request.expires_at, decision: "denied", reason: null },
    },
  ];
  return { messages, records };
}

/** What the conversation shows, in order: the user's messages, the cards (state and name),
 * the answers' texts, the approval boxes. */
function shown(el: HTMLElement): string[] {
  return [...el.querySelectorAll(".conversation .msg.user p, .conversation .tool-card header, .conversation .msg.assistant .md, .conversation .approval")].map(
    (e) => `${e.className.split(" ")[0] || e.tagName.toLowerCase()}: ${e.textContent?.trim()}`,
  );
}

describe("a fare alert the user denies", () => {
  for (const [lang, notCreated, declined, failed] of [
    ["en", "Not created", "You declined this.", "Didn't work"],
    ["de", "Nicht angelegt", "Du hast das abgelehnt.", "Hat nicht geklappt"],
  ] as const) {
    it(`is a neutral "${notCreated}" where it was asked, live and after a reload alike (${lang})`, async () => {
      // Live: the question, its card waiting for approval, then Deny.
      const live = page(async (req, init) => {
        if (req.path.startsWith("/chats?")) return json({ items: [] });
        if (req.path === "/chat") return asking(lang);
        if (req.path === "/chats/c1/tool-calls/tc_9/deny") return denied(lang);
        return never(init);
      }, lang);
      await live.send(words[lang].ask);
      await vi.waitFor(() => expect(live.turns()[0]?.getAttribute("data-phase")).toBe("done"));
      const card = live.turns()[0].querySelector(".tool-card")!;
      expect(card.querySelector(".badge")?.textContent).toBe(lang === "en" ? "Waiting for your approval" : "Wartet auf deine Bestätigung");
      const deny = [...live.el.querySelectorAll<HTMLButtonElement>(".approval button")].find((b) => b.textContent === (lang === "en" ? "Deny" : "Ablehnen"))!;
      deny.click();
      await vi.waitFor(() => expect(live.turns()[1]?.getAttribute("data-phase")).toBe("done"));

      // The card that waited now says what became of it: not created, neutrally.
      const cards = live.el.querySelectorAll(".conversation .tool-card");
      expect(cards).toHaveLength(1);
      expect(live.turns()[0].contains(cards[0])).toBe(true);
      expect(cards[0].getAttribute("data-status")).toBe("declined");
      expect(cards[0].querySelector(".badge")?.textContent).toBe(notCreated);
      expect(cards[0].querySelector(".tool-error")).toBeNull();
      expect(live.el.querySelector(".conversation")?.textContent).not.toContain(failed);
      expect(live.turns()[0].querySelector(".approval")?.textContent).toContain(declined);
      expect(live.turns()[0].querySelectorAll(".approval button")).toHaveLength(0);
      const liveView = shown(live.el);
      unmount();

      // Reloaded: the chat rebuilt from its stored messages and the call's audit record.
      window.history.replaceState(null, "", "#/chat/c1");
      const { messages, records } = stored(lang);
      const reloaded = page(async (req, init) => {
        if (req.path.startsWith("/chats?")) return json({ items: [] });
        if (req.path.startsWith("/chats/c1/messages")) return json({ items: messages });
        if (req.path.startsWith("/chats/c1/tool-calls")) return json({ items: records });
        return never(init);
      }, lang);
      await vi.waitFor(() => expect(reloaded.el.querySelector(".history .tool-card")).not.toBeNull());
      expect(reloaded.el.querySelector(".history .tool-card .badge")?.textContent).toBe(notCreated);
      expect(shown(reloaded.el)).toEqual(liveView);
      expect(liveView).toEqual([
        `p: ${words[lang].ask}`,
        `header: ${notCreated}${lang === "en" ? "Fare alert" : "Preisalarm"}`,
        `md: ${words[lang].question}`,
        `approval: ${lang === "en" ? "Approve?" : "Bestätigen?"} ${request.summary}${declined}`,
        `md: ${words[lang].answer}`,
      ]);
    });
  }
});

describe("settleCalls", () => {
  const play = (turn: TurnView, events: RouterEvent[]) => events.reduce((t, e, i) => reduce(t, e, 1000 + i * 100), turn);
  const asked = play(newTurn("a", "Alert me"), [
    { type: "init", id: 0, chat_id: "c1", created: true, turn_id: "t1" },
    { type: "tool_result", id: 1, tool: "create_fare_alert", job_id: "tc_9", status: "awaiting_approval", metadata: { approval: true }, result: request },
    { type: "approval_required", id: 2, ...request },
    { type: "done", id: 3 },
  ]);

  it("shows an approved call's progress and result on the card that asked, once", () => {
    const decision = newTurn("b");
    const running = play(decision, [
      { type: "init", id: 0, chat_id: "c1", created: false, turn_id: "t2" },
      { type: "tool_started", id: 1, tool: "create_fare_alert", job_id: "tc_9", deduped: false, status: "running" },
    ]);
    let [first, second] = settleCalls([asked.blocks, running.blocks]);
    const card = (blocks: Block[]) => blocks.flatMap((b) => (b.kind === "tool" ? [b.card] : []));
    expect(card(first).map((c) => c.phase)).toEqual(["running"]);
    expect(card(second)).toEqual([]);
    const done = play(running, [{ type: "tool_result", id: 2, tool: "create_fare_alert", job_id: "tc_9", status: "succeeded", metadata: {}, result: { id: "al_1" } }]);
    [first, second] = settleCalls([asked.blocks, done.blocks]);
    expect(card(first).map((c) => [c.phase, c.result])).toEqual([["succeeded", { id: "al_1" }]]);
    expect(first.find((b) => b.kind === "tool")?.key).toBe(asked.blocks.find((b) => b.kind === "tool")?.key);
    expect(card(second)).toEqual([]);
  });

  it("leaves repeated calls that never asked for approval where they are", () => {
    const search = (key: string): TurnView =>
      play(newTurn(key, "Flights"), [{ type: "tool_result", id: 1, tool: "search_flights", job_id: "tc_1", status: "succeeded", metadata: {}, result: null }]);
    const groups = [search("x").blocks, search("y").blocks];
    expect(settleCalls(groups)).toBe(groups);
  });
});
