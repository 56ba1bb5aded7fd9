import { render } from "preact";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Api } from "../src/api";
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
});

describe("config.json", () => {
  const page = "https://chat.example.com/app/index.html";

  it("reads a deployment's config and resolves a relative router URL", () => {
    expect(parseConfig({ routerUrl: "https://abc.lambda-url.eu-central-1.on.aws/" }, page)).toEqual({
      routerUrl: "https://abc.lambda-url.eu-central-1.on.aws",
      auth: { type: "bearer" },
    });
    expect(parseConfig({ routerUrl: "api", auth: { type: "dev", token: "t", user: "u" } }, page)).toEqual({
      routerUrl: "https://chat.example.com/app/api",
      auth: { type: "dev", token: "t", user: "u" },
    });
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
    const tokens = new Tokens({ routerUrl: "https://router.example", auth: { type: "bearer" } }, memory());
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
