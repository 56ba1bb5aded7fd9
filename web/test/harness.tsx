// The page against a router faked by a function: each request is recorded and answered by
// `answer`. For the page-level tests (composer, approvals, alerts, language).

import { render } from "preact";
import { vi } from "vitest";
import { Api } from "../src/api";
import { App } from "../src/components/App";
import { parseConfig, Tokens } from "../src/config";
import type { Lang } from "../src/i18n";

export const tick = () => new Promise((r) => setTimeout(r, 0));

export const frame = (id: number, event: string, data: unknown) => `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
export const sse = (...frames: string[]) => new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
export const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(status === 204 ? null : JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
/** The router's error envelope. */
export const refusal = (status: number, code: string, message: string, details?: unknown, headers: Record<string, string> = {}) =>
  json({ error: { code, message, ...(details === undefined ? {} : { details }) } }, status, headers);
/** A request that never answers (until the page gives it up). */
export const never = (init?: RequestInit) =>
  new Promise<Response>((_resolve, reject) => init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));

export interface Seen {
  method: string;
  path: string;
  body?: string;
}

let mounted: HTMLElement | undefined;

export function unmount() {
  if (mounted) render(null, mounted);
  mounted?.remove();
  mounted = undefined;
  window.history.replaceState(null, "", "/");
  sessionStorage.clear();
}

export function page(answer: (req: Seen, init?: RequestInit) => Promise<Response>, lang: Lang = "en") {
  const seen: Seen[] = [];
  const fetchImpl = vi.fn(async (url: RequestInfo | URL, init?: RequestInit) => {
    const u = new URL(String(url));
    const req = { method: init?.method ?? "GET", path: u.pathname + u.search, body: init?.body as string | undefined };
    seen.push(req);
    return answer(req, init);
  });
  const tokens = new Tokens(parseConfig({ routerUrl: "https://router.example", auth: { type: "dev", token: "dev" } }, "https://chat.example/"), {
    getItem: () => null,
    setItem: () => undefined,
    removeItem: () => undefined,
  });
  const api = new Api("https://router.example", tokens, fetchImpl as typeof fetch, { firstByteMs: 2_000, requestMs: 2_000 });
  const el = document.createElement("div");
  document.body.append(el);
  mounted = el;
  render(<App api={api} tokens={tokens} lang={lang} debug={false} />, el);
  const box = () => el.querySelector<HTMLTextAreaElement>("#composer-input")!;
  return {
    seen,
    el,
    box,
    /** Types `text` into the message box. */
    async type(text: string) {
      box().value = text;
      box().dispatchEvent(new Event("input", { bubbles: true }));
      await tick();
    },
    submit() {
      el.querySelector<HTMLFormElement>("form.composer")!.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true }));
    },
    enter() {
      box().dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    },
    async send(text: string) {
      await this.type(text);
      this.submit();
    },
    turns: () => [...el.querySelectorAll<HTMLElement>(".live .turn")],
    posts: () => seen.filter((s) => s.method === "POST" && s.path === "/chat"),
  };
}
