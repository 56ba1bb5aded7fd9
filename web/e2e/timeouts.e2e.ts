// The built page (web/dist) in Chromium against a stand-in router that never answers: the
// chat list and a turn give up with a clear error and Retry, and Retry asks for the same
// turn (same Idempotency-Key) once the router answers. Needs no stack, only the build:
//
//   cd web && npm run build && npm run e2e:stub
//
// Both servers listen on 127.0.0.1 on ports the system picks; screenshots go to WEB_E2E_DIR.

import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module without types
import { createServer } from "../scripts/serve.mjs";

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DIST = path.join(WEB, "dist");
const SHOTS = process.env.WEB_E2E_DIR ?? path.resolve(WEB, "..", ".local/run/web-e2e");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
/** Short waits, so the test does not take half a minute (config.json's `timeouts`). */
const FIRST_BYTE_SECONDS = 2;
const REQUEST_SECONDS = 1.5;

interface Seen {
  method: string;
  url: string;
  key?: string;
  body: string;
}

/** The stand-in router: hangs on every request until `answering`, then answers the chat
 * list and `POST /chat` as the router would. */
const router = {
  answering: false,
  seen: [] as Seen[],
  hung: new Set<http.ServerResponse>(),
};

const frame = (id: number, event: string, data: unknown) => `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

let routerServer: http.Server;
let page_: { server: http.Server; listen: () => Promise<number> };
let pageUrl = "";
let dir = "";
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (!existsSync(path.join(DIST, "index.html"))) throw new Error("no web/dist: run `npm run build` in web/ first");
  mkdirSync(SHOTS, { recursive: true });

  routerServer = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const key = req.headers["idempotency-key"];
      router.seen.push({ method: req.method ?? "", url: req.url ?? "", key: typeof key === "string" ? key : undefined, body });
      if (!router.answering) {
        router.hung.add(res); // never answered
        res.on("close", () => router.hung.delete(res));
        return;
      }
      if (req.method === "GET" && req.url?.startsWith("/chats?")) {
        res.writeHead(200, { "content-type": "application/json" });
        const items = [{ chat_id: "c1", title: "Hello after all", message_count: 2, created_at: new Date().toISOString(), active_at: new Date().toISOString() }];
        return res.end(JSON.stringify({ items }));
      }
      if (req.method === "POST" && req.url === "/chat") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        return res.end(
          frame(0, "init", { chat_id: "c1", created: true, turn_id: "t1" }) +
            frame(1, "assistant_token", { content: "Here I am." }) +
            frame(2, "final", { message: { role: "assistant", content: "Here I am." }, session_state: {}, tool_result: null }) +
            frame(3, "done", {}),
        );
      }
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "not_found", message: "not found" } }));
    });
  });
  await new Promise<void>((r) => routerServer.listen(0, "127.0.0.1", r));
  const routerPort = (routerServer.address() as AddressInfo).port;

  // The page as built, with a config.json of its own (a deployment's: a pasted token).
  dir = mkdtempSync(path.join(tmpdir(), "web-e2e-timeouts-"));
  cpSync(DIST, path.join(dir, "dist"), { recursive: true });
  writeFileSync(
    path.join(dir, "dist", "config.json"),
    JSON.stringify({
      routerUrl: "api",
      auth: { type: "bearer" },
      timeouts: { firstByteSeconds: FIRST_BYTE_SECONDS, requestSeconds: REQUEST_SECONDS },
    }),
  );
  page_ = createServer({ dist: path.join(dir, "dist"), router: `http://127.0.0.1:${routerPort}`, port: 0 });
  pageUrl = `http://127.0.0.1:${await page_.listen()}/`;

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-component-update"],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(() => sessionStorage.setItem("chat.bearer", "e2e-token"));
  page = await context.newPage();
  page.on("pageerror", (e) => console.error(`[page error] ${e.message}`));
});

afterAll(async () => {
  await browser?.close();
  for (const res of router.hung) res.destroy();
  page_?.server.closeAllConnections();
  await new Promise((r) => (page_ ? page_.server.close(r) : r(undefined)));
  routerServer?.closeAllConnections();
  await new Promise((r) => (routerServer ? routerServer.close(r) : r(undefined)));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the web chat when the router hangs", () => {
  it("shows the chat list loading, then 'Chats could not be loaded.' with Retry", async () => {
    await page.goto(pageUrl);
    await page.getByText("Loading chats…").waitFor();
    const failed = page.locator(".sidebar [role=alert]");
    await failed.waitFor({ timeout: REQUEST_SECONDS * 1000 + 5_000 });
    expect(await failed.textContent()).toContain("Chats could not be loaded.");
    expect(await failed.textContent()).toContain(`within ${REQUEST_SECONDS} seconds`);
    expect(await page.locator(".chat-list li").count()).toBe(0);
    await page.screenshot({ path: path.join(SHOTS, "t1-chats-not-loaded.png") });
  });

  it("gives a turn up with a clear error instead of 'Sending…' for ever", async () => {
    const started = Date.now();
    const box = page.getByLabel("Message", { exact: true });
    await box.fill("Hello, anyone there?");
    await box.press("Enter");
    await page.getByText("Sending…").waitFor();
    const error = page.locator(".live .turn .error-box");
    await error.waitFor({ timeout: FIRST_BYTE_SECONDS * 1000 + 5_000 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(FIRST_BYTE_SECONDS * 1000 - 100);
    expect(await error.getAttribute("data-code")).toBe("timeout");
    expect(await error.textContent()).toContain("The server did not answer in time.");
    expect(await page.getByText("Sending…").count()).toBe(0);
    // The message is back in the box, to send again; nothing runs.
    expect(await box.inputValue()).toBe("Hello, anyone there?");
    expect(await page.locator("button.send").isDisabled()).toBe(false);
    expect(await page.getByRole("button", { name: "Stop" }).count()).toBe(0);
    await page.screenshot({ path: path.join(SHOTS, "t2-turn-timed-out.png") });
  });

  it("Retry asks for the same turn with the same Idempotency-Key once the router answers", async () => {
    router.answering = true;
    await page.locator(".live .turn .error-box").getByRole("button", { name: "Retry" }).click();
    const turn = page.locator(".live .turn");
    await expect.poll(() => turn.last().getAttribute("data-phase"), { timeout: 10_000 }).toBe("done");
    expect(await turn.count()).toBe(1);
    expect(await turn.locator(".msg.assistant").textContent()).toContain("Here I am.");
    expect(await turn.locator(".error-box").count()).toBe(0);
    const posts = router.seen.filter((s) => s.method === "POST" && s.url === "/chat");
    expect(posts).toHaveLength(2);
    expect(posts[0].key).toBeTruthy();
    expect(posts[1].key).toBe(posts[0].key);
    expect(posts[1].body).toBe(posts[0].body);
    // The page reloads the chat list after a turn: it answers now.
    await page.locator(".chat-list a", { hasText: "Hello after all" }).waitFor();
    expect(await page.locator(".sidebar [role=alert]").count()).toBe(0);
    await page.screenshot({ path: path.join(SHOTS, "t3-retried.png") });
  });

  it("with the router down, the chat list says it could not be loaded, with Retry", async () => {
    for (const res of router.hung) res.destroy();
    routerServer.closeAllConnections();
    await new Promise((r) => routerServer.close(r));
    await page.reload();
    const failed = page.locator(".sidebar [role=alert]");
    await failed.waitFor({ timeout: REQUEST_SECONDS * 1000 + 5_000 });
    expect(await failed.textContent()).toContain("Chats could not be loaded.");
    expect(await failed.getByRole("button", { name: "Retry" }).count()).toBe(1);
    expect(await page.locator(".chat-list li").count()).toBe(0);
    await page.screenshot({ path: path.join(SHOTS, "t4-router-down.png") });
  });
});
