import { render } from "preact";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Api, DEFAULT_TIMEOUTS } from "../src/api";
import { App } from "../src/components/App";
import { ConfigError, parseConfig, Tokens } from "../src/config";

const memory = () => {
  const items = new Map<string, string>();
  return {
    getItem: (k: string) => items.get(k) ?? null,
    setItem: (k: string, v: string) => void items.set(k, v),
    removeItem: (k: string) => void items.delete(k),
  };
};
const tick = () => new Promise((r) => setTimeout(r, 0));

let root: HTMLElement | undefined;
afterEach(() => {
  if (root) render(null, root);
  root?.remove();
  root = undefined;
  window.history.replaceState(null, "", "/");
  sessionStorage.clear();
});

describe("config.json", () => {
  const page = "https://chat.example.com/app/index.html";

  it("reads a deployment's config and resolves a relative router URL", () => {
    expect(parseConfig({ routerUrl: "https://abc.lambda-url.eu-central-1.on.aws/" }, page)).toEqual({
      routerUrl: "https://abc.lambda-url.eu-central-1.on.aws",
      auth: { type: "bearer" },
      timeouts: { firstByteMs: 30_000, requestMs: 20_000 },
    });
    expect(parseConfig({ routerUrl: "api", auth: { type: "dev", token: "t", user: "u" } }, page)).toEqual({
      routerUrl: "https://chat.example.com/app/api",
      auth: { type: "dev", token: "t", user: "u" },
      timeouts: DEFAULT_TIMEOUTS,
    });
  });

  it("reads linkHosts and the timeouts", () => {
    const config = parseConfig(
      { routerUrl: "api", linkHosts: ["seats.aero", ".partner.example"], timeouts: { firstByteSeconds: 45, requestSeconds: 2.5 } },
      page,
    );
    expect(config.linkHosts).toEqual(["seats.aero", ".partner.example"]);
    expect(config.timeouts).toEqual({ firstByteMs: 45_000, requestMs: 2_500 });
    expect(parseConfig({ routerUrl: "api", timeouts: { requestSeconds: 5 } }, page).timeouts).toEqual({ firstByteMs: 30_000, requestMs: 5_000 });
    expect(parseConfig({ routerUrl: "api" }, page).linkHosts).toBeUndefined();
    expect(parseConfig({ routerUrl: "api", linkHosts: [] }, page).linkHosts).toEqual([]);
    expect(() => parseConfig({ routerUrl: "api", linkHosts: "seats.aero" }, page)).toThrow(/linkHosts/);
    expect(() => parseConfig({ routerUrl: "api", linkHosts: ["seats.aero", 1] }, page)).toThrow(/linkHosts/);
    expect(() => parseConfig({ routerUrl: "api", timeouts: 30 }, page)).toThrow(/timeouts/);
    for (const bad of [0, -1, "30", 601, Infinity]) {
      expect(() => parseConfig({ routerUrl: "api", timeouts: { firstByteSeconds: bad } }, page)).toThrow(/firstByteSeconds/);
    }
  });

  it("refuses what it cannot use", () => {
    expect(() => parseConfig(null, page)).toThrow(ConfigError);
    expect(() => parseConfig({}, page)).toThrow(/routerUrl/);
    expect(() => parseConfig({ routerUrl: "javascript:alert(1)" }, page)).toThrow(/http/);
    expect(() => parseConfig({ routerUrl: "https://x", auth: { type: "magic" } }, page)).toThrow(/auth.type/);
  });

  it("prefers a pasted token, and renews only a dev token", async () => {
    const storage = memory();
    const reload = vi.fn(async () => parseConfig({ routerUrl: "api", auth: { type: "dev", token: "fresh" } }, page));
    const tokens = new Tokens(parseConfig({ routerUrl: "api", auth: { type: "dev", token: "old" } }, page), storage, reload);
    expect(tokens.token()).toBe("old");
    expect(await tokens.refresh()).toBe(true);
    expect(tokens.token()).toBe("fresh");
    tokens.paste("Bearer pasted ");
    expect(tokens.token()).toBe("pasted");
    expect(await tokens.refresh()).toBe(false);
    tokens.forget();
    expect(tokens.token()).toBe("fresh");
  });
});

describe("the page", () => {
  it("asks for a token when the deployment has none, then lists the chats with it", async () => {
    const tokens = new Tokens({ routerUrl: "https://router.example", auth: { type: "bearer" }, timeouts: DEFAULT_TIMEOUTS }, memory());
    const fetchImpl = vi.fn(async (url: RequestInfo | URL, init?: RequestInit) => {
      expect(new Headers(init?.headers).get("authorization")).toBe("Bearer tok-123");
      expect(String(url)).toBe("https://router.example/chats?limit=50");
      const items = [{ chat_id: "01ABC", title: "Flights to Tokyo", message_count: 2, created_at: "", active_at: "" }];
      return new Response(JSON.stringify({ items }), { headers: { "content-type": "application/json" } });
    });
    const api = new Api("https://router.example", tokens, fetchImpl as typeof fetch);
    root = document.createElement("div");
    document.body.append(root);
    render(<App api={api} tokens={tokens} />, root);
    const box = root.querySelector<HTMLTextAreaElement>("textarea#token")!;
    expect(box).not.toBeNull();
    box.value = "tok-123";
    box.dispatchEvent(new Event("input", { bubbles: true }));
    await tick();
    root.querySelector<HTMLFormElement>("form")!.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true }));
    await vi.waitFor(() => expect(root!.querySelector(".chat-list a")?.textContent).toContain("Flights to Tokyo"));
    expect(root.querySelector('[aria-live="polite"]')).not.toBeNull();
    expect(root.querySelector("label[for=composer-input]")?.textContent).toContain("Message");
  });
});

const frame = (id: number, event: string, data: unknown) => `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const sse = (...frames: string[]) => new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
const answered = (turnId: string, text: string) =>
  sse(
    frame(0, "init", { chat_id: "c1", created: true, turn_id: turnId }),
    frame(1, "assistant_token", { content: text }),
    frame(2, "final", { message: { role: "assistant", content: text }, session_state: {}, tool_result: null }),
    frame(3, "done", {}),
  );
const json = (body: unknown) => new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
/** A request that never answers (until the page gives it up). */
const never = (init?: RequestInit) =>
  new Promise<Response>((_resolve, reject) => init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));

interface Seen {
  method: string;
  path: string;
  key: string | null;
  body?: string;
}

/** The page against a router that answers each request with `answer` (by call). */
function page(answer: (req: Seen, n: number, init?: RequestInit) => Promise<Response>, timeouts = { firstByteMs: 300, requestMs: 100 }) {
  const seen: Seen[] = [];
  const fetchImpl = vi.fn(async (url: RequestInfo | URL, init?: RequestInit) => {
    const u = new URL(String(url));
    const req = { method: init?.method ?? "GET", path: u.pathname + u.search, key: new Headers(init?.headers).get("idempotency-key"), body: init?.body as string | undefined };
    seen.push(req);
    return answer(req, seen.filter((s) => s.path === req.path && s.method === req.method).length, init);
  });
  const tokens = new Tokens(parseConfig({ routerUrl: "https://router.example", auth: { type: "dev", token: "dev" } }, "https://chat.example/"), memory());
  const api = new Api("https://router.example", tokens, fetchImpl as typeof fetch, timeouts);
  root = document.createElement("div");
  document.body.append(root);
  render(<App api={api} tokens={tokens} />, root);
  const el = root;
  return {
    seen,
    el,
    async send(text: string) {
      const box = el.querySelector<HTMLTextAreaElement>("#composer-input")!;
      box.value = text;
      box.dispatchEvent(new Event("input", { bubbles: true }));
      await tick();
      el.querySelector<HTMLFormElement>("form.composer")!.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true }));
    },
    turns: () => [...el.querySelectorAll<HTMLElement>(".live .turn")],
  };
}

describe("the page when the server does not answer", () => {
  it("shows the chat list loading, then 'Chats could not be loaded.' with Retry, never an empty list", async () => {
    let listAnswers = false;
    const p = page(async (req, _n, init) => {
      if (req.path.startsWith("/chats?")) {
        return listAnswers ? json({ items: [{ chat_id: "c9", title: "Tokyo", message_count: 2, created_at: "", active_at: "" }] }) : never(init);
      }
      return never(init);
    });
    expect(p.el.querySelector(".sidebar")?.textContent).toContain("Loading chats…");
    await vi.waitFor(() => expect(p.el.querySelector(".sidebar [role=alert]")?.textContent).toContain("Chats could not be loaded."));
    expect(p.el.querySelector(".sidebar [role=alert]")?.textContent).toContain("No answer from the server within 0.1 seconds.");
    expect(p.el.querySelector(".sidebar")?.textContent).not.toContain("Loading chats…");
    expect(p.el.querySelectorAll(".chat-list li")).toHaveLength(0);
    listAnswers = true;
    p.el.querySelector<HTMLButtonElement>(".sidebar button.retry")!.click();
    await vi.waitFor(() => expect(p.el.querySelector(".chat-list a")?.textContent).toContain("Tokyo"));
    expect(p.el.querySelector(".sidebar [role=alert]")).toBeNull();
  });

  it("says when there are no chats yet", async () => {
    const p = page(async (req, _n, init) => (req.path.startsWith("/chats?") ? json({ items: [] }) : never(init)));
    await vi.waitFor(() => expect(p.el.querySelector(".sidebar")?.textContent).toContain("No chats yet."));
  });

  it("gives a turn up when no byte comes, and Retry asks for the same turn with the same Idempotency-Key", async () => {
    const p = page(async (req, n, init) => {
      if (req.path.startsWith("/chats?")) return json({ items: [] });
      if (req.path === "/chat") return n === 1 ? never(init) : answered("t1", "Hello after all.");
      return never(init);
    });
    await p.send("Hello?");
    await vi.waitFor(() => expect(p.el.querySelector(".live .turn")?.textContent).toContain("Sending…"));
    await vi.waitFor(() => expect(p.turns()[0].querySelector(".error-box")?.getAttribute("data-code")).toBe("timeout"));
    const box = p.turns()[0].querySelector(".error-box")!;
    expect(box.textContent).toContain("The server did not answer in time.");
    expect(box.textContent).toContain("No answer from the server within 0.3 seconds. Retry asks for the same answer again");
    expect(p.turns()[0].textContent).not.toContain("Sending…");
    // The message is back in the box, not lost; Retry takes it out again.
    expect(p.el.querySelector<HTMLTextAreaElement>("#composer-input")!.value).toBe("Hello?");
    box.querySelector<HTMLButtonElement>("button.retry")!.click();
    await vi.waitFor(() => expect(p.turns()[0].getAttribute("data-phase")).toBe("done"));
    expect(p.el.querySelector<HTMLTextAreaElement>("#composer-input")!.value).toBe("");
    const posts = p.seen.filter((s) => s.path === "/chat");
    expect(posts).toHaveLength(2);
    expect(posts[1].key).toBe(posts[0].key);
    expect(posts[1].body).toBe(posts[0].body);
    // The same turn, shown once: no second turn, no error left over.
    expect(p.turns()).toHaveLength(1);
    expect(p.turns()[0].querySelector(".error-box")).toBeNull();
    expect(p.turns()[0].querySelectorAll(".msg.user")).toHaveLength(1);
    expect(p.turns()[0].querySelector(".msg.assistant")?.textContent).toContain("Hello after all.");
  });

  it("Retry follows a turn that began (its events from the start) rather than sending it again", async () => {
    const p = page(async (req, _n, init) => {
      if (req.path.startsWith("/chats?")) return json({ items: [] });
      if (req.path === "/chat") {
        // init and a first word, then the connection breaks; the resumes hang.
        let sent = false;
        const body = new ReadableStream<Uint8Array>({
          pull(c) {
            if (sent) return c.error(new TypeError("network error"));
            sent = true;
            c.enqueue(new TextEncoder().encode(frame(0, "init", { chat_id: "c1", created: true, turn_id: "t1" }) + frame(1, "assistant_token", { content: "Hel" })));
          },
        });
        return new Response(body, { headers: { "content-type": "text/event-stream" } });
      }
      if (req.path === "/chats/c1/turns/t1/events") return answered("t1", "Hello in full.");
      if (req.path.startsWith("/chats/c1/messages") || req.path.startsWith("/chats/c1/tool-calls")) return json({ items: [] });
      return never(init);
    });
    await p.send("Hello?");
    await vi.waitFor(() => expect(p.turns()[0]?.querySelector(".error-box")?.getAttribute("data-code")).toBe("timeout"), { timeout: 5_000 });
    expect(p.seen.filter((s) => s.path.startsWith("/chats/c1/turns/t1/events?after=1"))).toHaveLength(1);
    p.turns()[0].querySelector<HTMLButtonElement>(".error-box button.retry")!.click();
    await vi.waitFor(() => expect(p.turns()[0].getAttribute("data-phase")).toBe("done"));
    expect(p.seen.filter((s) => s.path === "/chat")).toHaveLength(1);
    expect(p.turns()).toHaveLength(1);
    expect(p.turns()[0].querySelector(".msg.assistant .md")?.textContent).toBe("Hello in full.");
  });

  it("after a turn the router ended with an error, Retry sends the message as a new turn", async () => {
    const p = page(async (req, n, init) => {
      if (req.path.startsWith("/chats?")) return json({ items: [] });
      if (req.path === "/chat") {
        if (n > 1) return answered("t2", "Now it works.");
        return sse(
          frame(0, "init", { chat_id: "c1", created: true, turn_id: "t1" }),
          frame(1, "error", { code: "llm_error", message: "The assistant is unavailable." }),
          frame(2, "done", {}),
        );
      }
      return never(init);
    });
    await p.send("Hello?");
    await vi.waitFor(() => expect(p.turns()[0]?.querySelector(".error-box")?.getAttribute("data-code")).toBe("llm_error"));
    p.turns()[0].querySelector<HTMLButtonElement>(".error-box button.retry")!.click();
    await vi.waitFor(() => expect(p.turns()[1]?.getAttribute("data-phase")).toBe("done"));
    const posts = p.seen.filter((s) => s.path === "/chat");
    expect(posts).toHaveLength(2);
    expect(posts[1].key).not.toBe(posts[0].key);
  });
});
