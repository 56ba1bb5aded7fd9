// @vitest-environment node
import { createHmac } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module without types
import { createServer, linkHostsFrom } from "../scripts/serve.mjs";

/** An upstream that streams three SSE frames 150 ms apart, and records what it got. */
let upstream: http.Server;
let upstreamPort = 0;
const seen: { url?: string; auth?: string; body?: string; closed?: boolean } = {};
let server: http.Server;
let base = "";
let port = 0;
let dir = "";

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    seen.url = req.url;
    seen.auth = req.headers.authorization;
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.body = body;
      res.writeHead(200, { "content-type": "text/event-stream" });
      let n = 0;
      const tick = () => {
        if (res.destroyed) return;
        res.write(`id: ${n}\nevent: e\ndata: {"n":${n}}\n\n`);
        if (++n < 3) setTimeout(tick, 150);
        else res.end();
      };
      tick();
    });
    res.on("close", () => (seen.closed = true));
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  upstreamPort = (upstream.address() as AddressInfo).port;

  dir = mkdtempSync(path.join(tmpdir(), "web-serve-"));
  mkdirSync(path.join(dir, "dist", "assets"), { recursive: true });
  writeFileSync(path.join(dir, "dist", "index.html"), "<!doctype html><p>page</p>");
  writeFileSync(path.join(dir, "dist", "assets", "app.js"), "console.log(1)");
  writeFileSync(path.join(dir, "secret"), "a-local-dev-secret-of-at-least-32-bytes\n");
  writeFileSync(path.join(dir, "outside.txt"), "not served");
  const made = createServer({
    dist: path.join(dir, "dist"),
    router: `http://127.0.0.1:${upstreamPort}/lambda-url/chat-router`,
    port: 0,
    jwtSecretFile: path.join(dir, "secret"),
    user: "web-user",
  });
  server = made.server;
  port = await made.listen();
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

/** A raw request, so Host and Origin can be anything. */
function raw(pathname: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path: pathname, headers }, (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the local page server", () => {
  it("serves the page and its assets", async () => {
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain("page");
    const asset = await fetch(`${base}/assets/app.js`);
    expect(asset.headers.get("cache-control")).toContain("immutable");
  });

  it("serves nothing outside dist", async () => {
    expect((await raw("/../outside.txt", { host: `127.0.0.1:${port}` })).status).toBe(404);
    expect((await raw("/%2e%2e/outside.txt", { host: `127.0.0.1:${port}` })).status).toBe(404);
  });

  it("mints a dev token for the local stack into config.json, never cached", async () => {
    const response = await fetch(`${base}/config.json`);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    const config = (await response.json()) as { routerUrl: string; auth: { type: string; token: string; user: string } };
    expect(config.routerUrl).toBe("api");
    expect(config.auth).toMatchObject({ type: "dev", user: "web-user" });
    const [head, claims, signature] = config.auth.token.split(".");
    const expected = createHmac("sha256", "a-local-dev-secret-of-at-least-32-bytes").update(`${head}.${claims}`).digest("base64url");
    expect(signature).toBe(expected);
    const decoded = JSON.parse(Buffer.from(claims, "base64url").toString());
    expect(decoded).toMatchObject({ sub: "web-user", iss: "http://127.0.0.1/dev", aud: "local-dev" });
    expect(decoded.exp - decoded.iat).toBe(3600);
    expect(config).not.toHaveProperty("linkHosts"); // ANSWER_LINK_HOSTS unset: the page's default
  });

  it("puts ANSWER_LINK_HOSTS into config.json as linkHosts when it is set", async () => {
    expect(linkHostsFrom(undefined)).toBeUndefined();
    expect(linkHostsFrom("  ")).toBeUndefined(); // blank is unset, as for the router
    expect(linkHostsFrom(" seats.aero, .partner.example,,")).toEqual(["seats.aero", ".partner.example"]);
    const made = createServer({
      dist: path.join(dir, "dist"),
      router: `http://127.0.0.1:${upstreamPort}/x`,
      port: 0,
      jwtSecretFile: path.join(dir, "secret"),
      linkHosts: linkHostsFrom("seats.aero,.partner.example"),
    });
    const otherPort = await made.listen();
    try {
      const config = (await (await fetch(`http://127.0.0.1:${otherPort}/config.json`)).json()) as { linkHosts?: string[] };
      expect(config.linkHosts).toEqual(["seats.aero", ".partner.example"]);
    } finally {
      made.server.closeAllConnections();
      await new Promise((r) => made.server.close(r));
    }
  });

  it("refuses other hosts (DNS rebinding) and other sites", async () => {
    expect((await raw("/config.json", { host: "evil.example" })).status).toBe(403);
    expect((await raw("/config.json", { host: `127.0.0.1:${port}`, origin: "https://evil.example" })).status).toBe(403);
    expect((await raw("/api/chats", { host: `127.0.0.1:${port}`, "sec-fetch-site": "cross-site" })).status).toBe(403);
    expect((await raw("/config.json", { host: `localhost:${port}`, "sec-fetch-site": "same-origin" })).status).toBe(200);
  });

  it("passes an event stream through chunk by chunk, with the request's path, query, body and token", async () => {
    const started = Date.now();
    const response = await fetch(`${base}/api/chats/c1/turns/t1/events?after=3`, {
      method: "POST",
      headers: { authorization: "Bearer tok", "content-type": "application/json" },
      body: JSON.stringify({ message: "hi" }),
    });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const reader = response.body!.getReader();
    const arrivals: number[] = [];
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      arrivals.push(Date.now() - started);
      text += new TextDecoder().decode(value);
    }
    expect(text.match(/event: e/g)).toHaveLength(3);
    // Three frames 150 ms apart arrive as three reads, spread out: nothing was buffered.
    expect(arrivals.length).toBeGreaterThanOrEqual(3);
    expect(arrivals[arrivals.length - 1] - arrivals[0]).toBeGreaterThanOrEqual(250);
    expect(seen.url).toBe("/lambda-url/chat-router/chats/c1/turns/t1/events?after=3");
    expect(seen.auth).toBe("Bearer tok");
    expect(seen.body).toBe('{"message":"hi"}');
  });

  it("stops reading upstream when the browser hangs up", async () => {
    seen.closed = false;
    const controller = new AbortController();
    const response = await fetch(`${base}/api/chat`, { method: "POST", body: "{}", signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await new Promise((r) => setTimeout(r, 200));
    expect(seen.closed).toBe(true);
  });

  it("answers 502 as the error envelope when the router is down", async () => {
    const dead = createServer({ dist: path.join(dir, "dist"), router: "http://127.0.0.1:1/x", port: 0 });
    const deadPort = await dead.listen();
    const response = await fetch(`http://127.0.0.1:${deadPort}/api/chats`);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("upstream_error");
    await new Promise((r) => dead.server.close(r));
  });
});
