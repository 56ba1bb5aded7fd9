#!/usr/bin/env node
// The web chat's local server (`make dev` starts it; docs/web.md#local-stack):
//
//   node web/scripts/serve.mjs --port 5173 --dist web/dist \
//     --router http://127.0.0.1:9000/lambda-url/chat-router --jwt-secret-file .local/run/jwt-secret
//
// - serves the built page (web/dist) on 127.0.0.1 only;
// - proxies /api/* to the chat-router (`cargo lambda watch` applies no Function URL CORS, so
//   the page and the router share this one origin), passing every chunk of an event stream
//   on as it comes, without buffering; a browser that hangs up only ends its request (the
//   turn goes on at the router);
// - with --jwt-secret-file, answers /config.json with a dev token it mints for --user
//   (HS256 with the local stack's key, as the chat CLI mints it): the token lives in this
//   process and in the page's memory, never in a file. Requests whose Host is not this
//   server's (DNS rebinding) or whose Origin is another site's are refused, and nothing is
//   sent with CORS headers, so no other site can read the config or use the proxy. When
//   ANSWER_LINK_HOSTS is set (the router's link allow-list), that config carries it as
//   `linkHosts`, so the page links to the same hosts as the router.
// Without --jwt-secret-file it serves dist/config.json as it is: a preview of a deployment.

import { createHmac } from "node:crypto";
import { createReadStream, readFileSync, statSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
};

// Headers that belong to one connection, not to the message (RFC 9110 §7.6.1).
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "host",
]);

const b64url = (data) => Buffer.from(data).toString("base64url");

/** An HS256 JWT of `claims` signed with `secret`. */
export function mintHs256(secret, claims) {
  const head = `${b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }))}.${b64url(JSON.stringify(claims))}`;
  return `${head}.${createHmac("sha256", secret).update(head).digest("base64url")}`;
}

/** The dev token the local stack accepts: its issuer and audience, one hour. */
export function devToken(secret, user, { issuer = "http://127.0.0.1/dev", audience = "local-dev", now = Date.now() } = {}) {
  const iat = Math.floor(now / 1000);
  return mintHs256(secret, { sub: user, iss: issuer, aud: audience, iat, exp: iat + 3600 });
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", ...headers });
  res.end(body);
}

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/** `ANSWER_LINK_HOSTS` as config.json's `linkHosts`: the list, or undefined when it is
 * unset or blank (the router then uses its default, and so does the page). */
export function linkHostsFrom(value) {
  if (value === undefined || !value.trim()) return undefined;
  return value.split(",").map((h) => h.trim()).filter((h) => h !== "");
}

/**
 * @param {{dist: string, router: string, port: number, jwtSecretFile?: string, user?: string,
 *          issuer?: string, audience?: string, linkHosts?: string[],
 *          log?: (line: string) => void}} options
 */
export function createServer(options) {
  const dist = path.resolve(options.dist);
  const router = new URL(options.router.replace(/\/+$/, "") + "/");
  const log = options.log ?? (() => undefined);
  let allowedHosts = new Set();
  const server = http.createServer((req, res) => {
    const host = (req.headers.host ?? "").toLowerCase();
    if (!allowedHosts.has(host)) return send(res, 403, "forbidden host\n");
    const origin = req.headers.origin;
    if (origin !== undefined && !allowedHosts.has(origin.replace(/^http:\/\//, "").toLowerCase())) {
      return send(res, 403, "forbidden origin\n");
    }
    const url = new URL(req.url ?? "/", "http://local");
    const api = url.pathname === "/api" || url.pathname.startsWith("/api/");
    const dev = url.pathname === "/config.json" && options.jwtSecretFile;
    // Browsers send this with every request: for the token and the proxy, only the page's
    // own (or a typed address) will do.
    const site = req.headers["sec-fetch-site"];
    if ((api || dev) && site !== undefined && site !== "same-origin" && site !== "none") {
      return send(res, 403, "forbidden cross-site request\n");
    }
    if (api) return proxy(req, res, url);
    if (dev) return config(res);
    if (req.method !== "GET" && req.method !== "HEAD") return send(res, 405, "method not allowed\n", { allow: "GET, HEAD" });
    return file(req, res, url.pathname);
  });

  function config(res) {
    let secret;
    try {
      secret = readFileSync(options.jwtSecretFile, "utf8").trim();
    } catch {
      return send(res, 503, "no dev key yet: is the local stack up (make dev)?\n");
    }
    const user = options.user ?? "dev-user";
    const body = JSON.stringify({
      routerUrl: "api",
      auth: { type: "dev", token: devToken(secret, user, options), user },
      ...(options.linkHosts ? { linkHosts: options.linkHosts } : {}),
    });
    res.writeHead(200, { "content-type": TYPES[".json"], "cache-control": "no-store", ...SECURITY_HEADERS });
    res.end(body);
  }

  function file(req, res, pathname) {
    let relative;
    try {
      relative = decodeURIComponent(pathname);
    } catch {
      return send(res, 400, "bad path\n");
    }
    const target = path.resolve(dist, "." + path.posix.normalize("/" + relative));
    if (target !== dist && !target.startsWith(dist + path.sep)) return send(res, 404, "not found\n");
    let full = target;
    let stat;
    try {
      stat = statSync(full);
      if (stat.isDirectory()) {
        full = path.join(full, "index.html");
        stat = statSync(full);
      }
    } catch {
      return send(res, 404, "not found\n");
    }
    const ext = path.extname(full);
    const immutable = full.startsWith(path.join(dist, "assets") + path.sep);
    res.writeHead(200, {
      "content-type": TYPES[ext] ?? "application/octet-stream",
      "content-length": stat.size,
      "cache-control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
      ...SECURITY_HEADERS,
    });
    if (req.method === "HEAD") return res.end();
    createReadStream(full).pipe(res);
  }

  function proxy(req, res, url) {
    const rest = url.pathname.replace(/^\/api\/?/, "");
    const target = new URL(rest + url.search, router);
    const headers = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!HOP_BY_HOP.has(name) && value !== undefined) headers[name] = value;
    }
    const upstream = http.request(target, { method: req.method, headers }, (answer) => {
      const out = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (!HOP_BY_HOP.has(name) && value !== undefined) out[name] = value;
      }
      res.writeHead(answer.statusCode ?? 502, out);
      res.flushHeaders();
      // Each chunk goes out as it arrives: pipe writes it at once, and no compression or
      // buffering stands between (SSE frames reach the page as the router sends them).
      answer.pipe(res);
      answer.on("error", () => res.destroy());
    });
    upstream.setNoDelay(true);
    upstream.on("error", (error) => {
      log(`[web] proxy: ${req.method} ${target.pathname}: ${error.message}`);
      if (!res.headersSent) {
        send(res, 502, JSON.stringify({ error: { code: "upstream_error", message: "the chat-router did not answer" } }), {
          "content-type": TYPES[".json"],
        });
      } else {
        res.destroy();
      }
    });
    // The browser hung up: stop reading for it (the turn itself goes on at the router).
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }

  const listen = () =>
    new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, "127.0.0.1", () => {
        const { port } = server.address();
        allowedHosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
        resolve(port);
      });
    });
  return { server, listen };
}

function parseArgs(argv) {
  const options = {
    port: Number(process.env.WEB_PORT ?? 5173),
    dist: path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "dist"),
    router: `http://127.0.0.1:${process.env.WATCH_PORT ?? 9000}/lambda-url/chat-router`,
    user: process.env.CHAT_USER ?? "dev-user",
    linkHosts: linkHostsFrom(process.env.ANSWER_LINK_HOSTS),
  };
  for (let i = 0; i < argv.length; i++) {
    const [name, value] = [argv[i], argv[i + 1]];
    switch (name) {
      case "--port": options.port = Number(value); i++; break;
      case "--dist": options.dist = value; i++; break;
      case "--router": options.router = value; i++; break;
      case "--jwt-secret-file": options.jwtSecretFile = value; i++; break;
      case "--user": options.user = value; i++; break;
      default:
        console.error(`unknown argument ${name}; see the comment at the top of ${path.basename(fileURLToPath(import.meta.url))}`);
        process.exit(2);
    }
  }
  return options;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const options = parseArgs(process.argv.slice(2));
  const { server, listen } = createServer({ ...options, log: (line) => console.error(line) });
  listen().then(
    (port) => console.error(`[web] serving ${options.dist} at http://127.0.0.1:${port}/ (router: ${options.router})`),
    (error) => {
      console.error(`[web] cannot listen on 127.0.0.1:${options.port}: ${error.message}`);
      process.exit(1);
    },
  );
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections(); // open event streams too
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
