// @vitest-environment node
import { describe, expect, it } from "vitest";
import type { RouterEvent } from "../src/events";
import { newTurn, phaseOf, reduce, refused, type TurnView } from "../src/reducer";

const flights = {
  seatsResult: { success: true, results: { count: 1, flights: [{ id: "a1", airline: "TK", miles: 70000, price: "70,000 miles + $41.74" }] } },
  cashResult: { success: true, results: { count: 0, flights: [] } },
};

/** A travel turn with every event the router sends, in its order. */
const EVENTS: RouterEvent[] = [
  { type: "init", id: 0, chat_id: "c1", created: true, turn_id: "t1" },
  { type: "assistant_token", id: 1, content: "Let me " },
  { type: "assistant_token", id: 2, content: "look." },
  { type: "tool_started", id: 3, tool: "search_flights", job_id: "tc_1", deduped: false, status: "running" },
  { type: "tool_started", id: 4, tool: "search_knowledge_base", job_id: "tc_2", deduped: true, status: "running" },
  { type: "tool_progress", id: 5, tool: "search_flights", job_id: "tc_1", message: "Award search done: 1 found." },
  { type: "tool_result", id: 6, tool: "search_flights", job_id: "tc_1", status: "succeeded", metadata: { mode: "flights" }, result: flights },
  {
    type: "tool_result", id: 7, tool: "search_knowledge_base", job_id: "tc_2", status: "succeeded",
    metadata: { mode: "rag_docs", sources: [{ id: "d#1", document_id: "d", snippet: "s", score: 1 }] }, result: null,
  },
  { type: "tool_result", id: 8, tool: "book_hotel", job_id: null, status: "rejected", metadata: { reason: "unknown_tool", message: "Unknown tool" } },
  { type: "handoff", id: 9, from: "travel", to: "support", reason: "a policy question" },
  { type: "tool_started", id: 10, tool: "search_flights", job_id: "tc_3", deduped: false, status: "queued" },
  { type: "ui", id: 11, kind: "quick_replies", payload: { replies: ["First class?", "Other dates"] } },
  { type: "ui", id: 12, kind: "flight_options", payload: { flights: [{ option: 1, flight: { id: "a1" } }] } },
  { type: "ui", id: 13, kind: "a_kind_from_the_future", payload: {} },
  { type: "approval_required", id: 14, job_id: "tc_4", tool: "create_fare_alert", arguments: { origin: "FRA" }, summary: "Fare alert FRA → JFK", expires_at: "2027-01-01T00:00:00Z" },
  { type: "ui", id: 15, kind: "approval", payload: { job_id: "tc_4", tool: "create_fare_alert", summary: "Fare alert FRA → JFK", expires_at: "x" } },
  { type: "assistant_token", id: 16, content: "Here are " },
  { type: "assistant_token", id: 17, content: "the flights." },
  { type: "debug", id: 18, kind: "llm_choice", payload: {} },
  { type: "final", id: 19, message: { role: "assistant", content: "Here are the flights." }, session_state: { language: "en" }, tool_result: flights, metadata: { notice: "local stack with fakes" } },
  { type: "done", id: 20 },
];

function play(events: RouterEvent[], start = newTurn("k", "Flights FRA to JFK")): TurnView {
  return events.reduce((turn, e, i) => reduce(turn, e, 1000 + i * 100), start);
}

describe("reduce", () => {
  const turn = play(EVENTS);

  it("keeps the trace an init names", () => {
    const trace = { id: "4bf92f3577b34da6a3ce929d0e0e4736", url: "http://127.0.0.1:6006/t" };
    const turn = reduce(newTurn("k", "hi"), { type: "init", id: 0, chat_id: "c1", created: true, turn_id: "t1", trace }, 1000);
    expect(turn.trace).toEqual(trace);
  });

  it("keeps the turn's ids and ends done", () => {
    expect(turn).toMatchObject({ chatId: "c1", turnId: "t1", phase: "done", streaming: false, notice: "local stack with fakes" });
    expect(turn.sessionState).toEqual({ language: "en" });
  });

  it("orders the blocks as the events came, the answer's UI after its text (as a reloaded chat has them)", () => {
    expect(turn.blocks.map((b) => b.kind)).toEqual([
      "user", "text", "tool", "tool", "tool", "handoff", "tool", "text", "quick_replies", "flight_options", "approval",
    ]);
  });

  it("joins streamed tokens and lets final's stored answer stand", () => {
    const texts = turn.blocks.filter((b) => b.kind === "text").map((b) => (b as { text: string }).text);
    expect(texts).toEqual(["Let me look.", "Here are the flights."]);
  });

  it("moves each card from running to its end, with a duration", () => {
    const cards = turn.blocks.flatMap((b) => (b.kind === "tool" ? [b.card] : []));
    expect(cards.map((c) => [c.tool, c.phase, c.status])).toEqual([
      ["search_flights", "succeeded", "succeeded"],
      ["search_knowledge_base", "deduplicated", "succeeded"],
      ["book_hotel", "failed", "rejected"],
      ["search_flights", "pending", "queued"],
    ]);
    expect(cards[0].durationMs).toBe(300); // started at event 3, result at event 6
    expect(cards[0].progress).toBeUndefined(); // shown until the result, then gone
    expect(cards[0].result).toEqual(flights);
    expect(cards[2].durationMs).toBeUndefined();
  });

  it("shows a card as running between its start and its result", () => {
    const mid = play(EVENTS.slice(0, 6));
    const card = mid.blocks.find((b) => b.kind === "tool");
    expect(card).toMatchObject({ card: { phase: "running", progress: "Award search done: 1 found." } });
    expect(mid.phase).toBe("streaming");
  });

  it("shows one approval box for approval_required and its ui twin", () => {
    expect(turn.blocks.filter((b) => b.kind === "approval")).toHaveLength(1);
  });

  it("ends failed with an error block on error", () => {
    const failed = play([
      EVENTS[0],
      { type: "error", id: 1, code: "llm_error", message: "The assistant is unavailable." },
      { type: "done", id: 2 },
    ]);
    expect(failed.phase).toBe("failed");
    expect(failed.errorCode).toBe("llm_error");
    expect(failed.blocks.at(-1)).toMatchObject({ kind: "error", code: "llm_error", message: "The assistant is unavailable." });
  });

  it("keeps what a stopped turn had said, marked as stopped, with no error", () => {
    const stopped = play([
      EVENTS[0],
      { type: "assistant_token", id: 1, content: "Once upon" },
      { type: "assistant_token", id: 2, content: " a time" },
      { type: "final", id: 3, message: { role: "assistant", content: "Once upon a time", stopped: true }, session_state: {}, tool_result: null },
      { type: "done", id: 4 },
    ]);
    expect(stopped.blocks.map((b) => b.kind)).toEqual(["user", "text"]);
    expect(stopped.blocks[1]).toMatchObject({ text: "Once upon a time", stopped: true });
    expect(stopped.phase).toBe("done");
    expect(stopped.errorCode).toBeUndefined();
  });

  it("adds final's answer when no token came", () => {
    const quiet = play([EVENTS[0], { type: "final", id: 1, message: { role: "assistant", content: "Hi" }, session_state: {}, tool_result: null }]);
    expect(quiet.blocks.at(-1)).toMatchObject({ kind: "text", text: "Hi" });
  });

  it("ignores unknown events, unknown ui kinds and debug events", () => {
    const before = play(EVENTS.slice(0, 3));
    const unknown = { type: "brand_new", id: 3 } as unknown as RouterEvent;
    expect(reduce(before, unknown, 0)).toBe(before);
    expect(reduce(before, { type: "debug", id: 3, kind: "x", payload: {} }, 0)).toBe(before);
    expect(reduce(before, { type: "ui", id: 3, kind: "hologram", payload: {} }, 0)).toBe(before);
    expect(reduce(before, { type: "tool_progress", id: 3, tool: "x", job_id: "nope", message: "m" }, 0)).toBe(before);
  });

  it("is pure: the same events give the same view", () => {
    expect(play(EVENTS)).toEqual(turn);
  });

  it("shows a refusal before the stream as an error", () => {
    const r = refused(newTurn("k", "hi"), "rate_limited", "too many");
    expect(r).toMatchObject({ phase: "failed", errorCode: "rate_limited" });
    expect(r.blocks.at(-1)).toMatchObject({ kind: "error", code: "rate_limited" });
  });
});

describe("phaseOf", () => {
  it("maps every status", () => {
    const statuses = ["running", "queued", "awaiting_approval", "succeeded", "failed", "timeout", "canceled", "rejected", "skipped", "rate_limited", "expired"];
    expect(statuses.map((s) => phaseOf(s))).toEqual([
      "running", "pending", "pending", "succeeded", "failed", "failed", "failed", "failed", "failed", "failed", "declined",
    ]);
    expect(phaseOf("succeeded", true)).toBe("deduplicated");
    // A call the user denied is reported as canceled: it did not run, and that is no failure.
    expect(phaseOf("canceled", false, true)).toBe("declined");
  });
});
