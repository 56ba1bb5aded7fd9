import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { COUNT_FROM, MAX_MESSAGE_CHARS, messageLength } from "../src/limits";
import { frame, json, never, page, refusal, sse, tick, unmount } from "./harness";

afterEach(unmount);

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const read = (file: string) => readFileSync(path.join(root, file), "utf8");

describe("the message limit", () => {
  it("is the router's: its default (config.rs, configuration.md), and the OpenAPI maxLength should it gain one", () => {
    const rust = /parse_or\("MAX_MESSAGE_CHARS",\s*(\d+)usize\)/.exec(read("functions/chat-router/src/config.rs"));
    expect(rust, "functions/chat-router/src/config.rs reads MAX_MESSAGE_CHARS").not.toBeNull();
    expect(MAX_MESSAGE_CHARS).toBe(Number(rust![1]));
    const doc = /\| `MAX_MESSAGE_CHARS` \| `(\d+)` \|/.exec(read("docs/configuration.md"));
    expect(MAX_MESSAGE_CHARS).toBe(Number(doc![1]));
    const openapi = JSON.parse(read("docs/openapi.json")) as {
      components: { schemas: { ChatRequest: { properties: { message: { maxLength?: number; description: string } } } } };
    };
    const message = openapi.components.schemas.ChatRequest.properties.message;
    expect(message.description).toContain("MAX_MESSAGE_CHARS");
    expect(message.maxLength ?? MAX_MESSAGE_CHARS).toBe(MAX_MESSAGE_CHARS);
  });

  it("counts characters as the router does: normalised, trimmed, in Unicode characters", () => {
    expect(messageLength("  hello \n")).toBe(5);
    expect(messageLength("a\r\nb")).toBe(3); // CRLF is one line break
    expect(messageLength("😀")).toBe(1); // one character, two UTF-16 units
    expect(messageLength("a\u200Bb\u0007")).toBe(2); // invisible and control characters go
    expect(messageLength("\uFB01")).toBe(2); // NFKC: the ligature "ﬁ" is "fi"
  });
});

describe("the message box near and over the limit", () => {
  const quiet = () =>
    page(async (req, init) => (req.path.startsWith("/chats?") ? json({ items: [] }) : never(init)), "de");

  it("shows a counter from 80 % of the limit, in the page's language", async () => {
    const p = quiet();
    const from = Math.ceil(MAX_MESSAGE_CHARS * COUNT_FROM);
    await p.type("x".repeat(from - 1));
    expect(p.el.querySelector(".char-count")).toBeNull();
    await p.type("x".repeat(from));
    expect(p.el.querySelector(".char-count")?.textContent).toBe("6.400 / 8.000 Zeichen");
    expect(p.el.querySelector(".char-count")?.classList.contains("over")).toBe(false);
    expect(p.box().getAttribute("aria-describedby")).toBe("composer-count");
    expect(p.el.querySelector<HTMLButtonElement>("button.send")!.disabled).toBe(false);
  });

  it("does not send a message over the limit, says why in the page's language, and keeps the text", async () => {
    const p = quiet();
    const text = "y".repeat(8100);
    await p.type(text);
    expect(p.el.querySelector(".char-count")?.textContent).toBe("8.100 / 8.000 Zeichen");
    expect(p.el.querySelector(".char-count")?.classList.contains("over")).toBe(true);
    expect(p.el.querySelector(".too-long[role=alert]")?.textContent).toBe(
      "Zu lang: höchstens 8.000 Zeichen. Kürze die Nachricht, um sie zu senden.",
    );
    expect(p.box().getAttribute("aria-invalid")).toBe("true");
    expect(p.el.querySelector<HTMLButtonElement>("button.send")!.disabled).toBe(true);
    p.submit();
    p.enter();
    await tick();
    await tick();
    expect(p.posts()).toHaveLength(0);
    expect(p.turns()).toHaveLength(0);
    expect(p.box().value).toBe(text);
    // Shortened to the limit, it goes.
    await p.type("y".repeat(MAX_MESSAGE_CHARS));
    expect(p.el.querySelector(".too-long")).toBeNull();
    expect(p.el.querySelector<HTMLButtonElement>("button.send")!.disabled).toBe(false);
  });
});

describe("a refused or failed message", () => {
  it("stays in the box, and the refusal is said in the page's language (German), not the router's English", async () => {
    const p = page(async (req) => {
      if (req.path.startsWith("/chats?")) return json({ items: [] });
      return refusal(413, "payload_too_large", "message: at most 8000 characters are allowed");
    }, "de");
    await p.send("Eine Frage zu Meilen");
    await vi.waitFor(() => expect(p.turns()[0]?.querySelector(".error-box")).not.toBeNull());
    const box = p.turns()[0].querySelector(".error-box")!;
    expect(box.getAttribute("data-code")).toBe("payload_too_large");
    expect(box.textContent).toBe("Die Nachricht ist dem Server zu lang.");
    expect(box.textContent).not.toContain("at most");
    // Sending it again as it is fails the same way: no Retry; the text is there to change.
    expect(box.querySelector("button.retry")).toBeNull();
    expect(p.box().value).toBe("Eine Frage zu Meilen");
  });

  it("translates each refusal code; a rate limit says when it works again, with Retry", async () => {
    const cases: [number, string, string, unknown, string][] = [
      [400, "validation_failed", "message: must not be empty", undefined, "The server did not accept this input."],
      [429, "rate_limited", "too many turns", { limit: "turns_per_minute", reset_at: "2027-03-01T13:05:00Z" }, "Too many messages for now. Possible again at "],
      [502, "upstream_error", "JWKS unavailable", undefined, "A service the chat needs is not available."],
    ];
    for (const [status, code, message, details, expected] of cases) {
      const p = page(async (req) => (req.path.startsWith("/chats?") ? json({ items: [] }) : refusal(status, code, message, details)));
      await p.send(`About ${code}`);
      await vi.waitFor(() => expect(p.turns()[0]?.querySelector(".error-box")).not.toBeNull());
      const box = p.turns()[0].querySelector(".error-box")!;
      expect(box.textContent, code).toContain(expected);
      expect(box.textContent, code).not.toContain(message);
      expect(p.box().value, code).toBe(`About ${code}`);
      if (code === "rate_limited") {
        const at = new Date("2027-03-01T13:05:00Z").toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit" });
        expect(box.querySelector("p")?.textContent).toBe(`Too many messages for now. Possible again at ${at}.`);
        expect(box.querySelector("button.retry")).not.toBeNull();
      }
      unmount();
    }
  });

  it("says turn_in_progress in German; the message stays in the box", async () => {
    const p = page(async (req, init) => {
      if (req.path.startsWith("/chats?")) return json({ items: [] });
      if (req.path === "/chat") return refusal(409, "turn_in_progress", "another turn of this chat is running", { turn_id: "t0" });
      if (req.path.startsWith("/chats/c1/turns/t0/events"))
        return sse(frame(0, "init", { chat_id: "c1", created: false, turn_id: "t0" }), frame(1, "final", { message: { role: "assistant", content: "Fertig." }, session_state: {}, tool_result: null }), frame(2, "done", {}));
      return never(init);
    }, "de");
    await p.send("Noch eine Frage");
    await vi.waitFor(() => expect(p.turns()[0]?.querySelector(".error-box p")?.textContent).toBe("Eine andere Nachricht dieses Chats wird noch beantwortet."));
    expect(p.box().value).toBe("Noch eine Frage");
  });

  it("goes back into the box when the turn ends with an error, and Retry takes it out again", async () => {
    let posts = 0;
    const p = page(async (req, init) => {
      if (req.path.startsWith("/chats?")) return json({ items: [] });
      if (req.path === "/chat") {
        posts++;
        if (posts === 1)
          return sse(frame(0, "init", { chat_id: "c1", created: true, turn_id: "t1" }), frame(1, "error", { code: "llm_error", message: "The assistant is unavailable." }), frame(2, "done", {}));
        return sse(frame(0, "init", { chat_id: "c1", created: false, turn_id: "t2" }), frame(1, "final", { message: { role: "assistant", content: "Hier." }, session_state: {}, tool_result: null }), frame(2, "done", {}));
      }
      return never(init);
    }, "de");
    await p.send("Hallo");
    await vi.waitFor(() => expect(p.turns()[0]?.querySelector(".error-box")?.textContent).toContain("Der Assistent war nicht erreichbar."));
    expect(p.turns()[0].querySelector(".error-box")?.textContent).not.toContain("unavailable");
    expect(p.box().value).toBe("Hallo");
    p.turns()[0].querySelector<HTMLButtonElement>("button.retry")!.click();
    await vi.waitFor(() => expect(p.turns()[1]?.getAttribute("data-phase")).toBe("done"));
    expect(p.box().value).toBe("");
  });
});
