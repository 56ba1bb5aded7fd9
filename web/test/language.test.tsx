import { render } from "preact";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ChatSummary, ToolCallRecord } from "../src/api";
import { ChatRow } from "../src/components/ChatRow";
import { routeLabel } from "../src/format";
import { textsFor, Words } from "../src/i18n";
import { frame, json, never, page, refusal, sse, unmount } from "./harness";

afterEach(unmount);

const chat = (id: string, title: string): ChatSummary => ({
  chat_id: id,
  title,
  message_count: 4,
  created_at: "2027-01-01T10:00:00Z",
  active_at: new Date().toISOString(),
});

describe("chats in the list tell apart", () => {
  const same = "Business class from Frankfurt to New York on 2027-02-26";

  it("by their last flight search, in the page's language, and the whole title on hover", () => {
    const root = document.createElement("div");
    document.body.append(root);
    const row = (lang: "en" | "de") =>
      render(
        <Words.Provider value={textsFor(lang)}>
          <ul>
            <ChatRow chat={chat("c1", same)} current={false} route={{ origin: "FRA", destination: "JFK", date: "2027-02-26" }} onRename={async () => undefined} onDelete={async () => undefined} />
            <ChatRow chat={chat("c2", same.replace("New York", "Boston"))} current={false} route={{ origin: "FRA", destination: "BOS", date: "2027-03-02" }} onRename={async () => undefined} onDelete={async () => undefined} />
          </ul>
        </Words.Provider>,
        root,
      );
    row("en");
    const routes = () => [...root.querySelectorAll(".meta .route")].map((r) => r.textContent);
    expect(routes()).toEqual(["FRA → JFK · 26 Feb", "FRA → BOS · 2 Mar"]);
    expect(root.querySelector("a")?.getAttribute("title")).toBe(same);
    row("de");
    expect(routes()).toEqual(["FRA → JFK · 26. Feb.", "FRA → BOS · 2. März"]);
    render(null, root);
    root.remove();
    expect(routeLabel({ origin: "MUC", destination: "ORD", date: "2027-06-03" }, textsFor("en"))).toBe("MUC → ORD · 3 Jun");
  });

  it("from the open chat's stored searches and from a live turn's last search", async () => {
    window.history.replaceState(null, "", "#/chat/c1");
    const search = (id: string, request: unknown, created: string): ToolCallRecord => ({
      id, chat_id: "c1", tool: "search_flights", status: "succeeded", attempt: 1, request, created_at: created, updated_at: created,
    });
    const p = page(async (req, init) => {
      if (req.path.startsWith("/chats?")) return json({ items: [chat("c1", same), chat("c2", same)] });
      if (req.path.startsWith("/chats/c1/messages")) return json({ items: [] });
      if (req.path.startsWith("/chats/c1/tool-calls"))
        return json({
          items: [
            search("tc_2", { origin: "FRA", destination: "JFK", depart_date: "2027-02-26", cabin: "BUSINESS" }, "2027-01-01T10:05:00Z"),
            search("tc_1", { origin: "FRA", destination: "EWR", depart_date: "2027-02-20", cabin: "BUSINESS" }, "2027-01-01T10:01:00Z"),
          ],
        });
      if (req.path === "/chat")
        return sse(
          frame(0, "init", { chat_id: "c1", created: false, turn_id: "t1" }),
          frame(1, "final", {
            message: { role: "assistant", content: "Here." },
            session_state: { last_flight_request: { origin: "FRA", destination: "BOS", depart_date: "2027-03-02", cabin: "BUSINESS", pax: 1 } },
            tool_result: null,
          }),
          frame(2, "done", {}),
        );
      return never(init);
    });
    const label = (id: string) => p.el.querySelector(`.chat-list a[href="#/chat/${id}"] .route`)?.textContent;
    await vi.waitFor(() => expect(label("c1")).toBe("FRA → JFK · 26 Feb"));
    expect(label("c2")).toBeUndefined(); // never opened here: its title alone
    await p.send("And to Boston on 2 March?");
    await vi.waitFor(() => expect(label("c1")).toBe("FRA → BOS · 2 Mar"));
  });
});

describe("the page's frame in German", () => {
  it("has a German heading and says a failed chat list in German, not the router's English", async () => {
    const p = page(async (req, init) => (req.path.startsWith("/chats?") ? refusal(500, "internal", "storage failure: table missing") : never(init)), "de");
    expect(p.el.querySelector(".top h1")?.textContent).toBe("Reise-Chat");
    await vi.waitFor(() => expect(p.el.querySelector(".sidebar [role=alert]")).not.toBeNull());
    const alert = p.el.querySelector(".sidebar [role=alert]")!;
    expect(alert.textContent).toContain("Die Chats konnten nicht geladen werden.");
    expect(alert.textContent).toContain("Auf dem Server ist etwas schiefgegangen.");
    expect(alert.textContent).not.toContain("storage failure");
  });
});
