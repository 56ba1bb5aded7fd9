// Loopback proxy that adds `Authorization: Bearer $MCP_TOKEN` to every request and forwards it
// to the MCP server, so that a client which cannot send credentials (the conformance runner)
// exercises the real, authenticated endpoint. node:http only.
//
//   MCP_TOKEN=<bearer jwt> node auth-proxy.mjs <upstream MCP url> [port]
//
// Listens on 127.0.0.1:<port> (default 9180; 0 picks a free port) and prints
// `ready http://127.0.0.1:<port>/mcp` once listening. Path mapping: `/mcp` (and anything
// below it) goes to the upstream URL's path; any other path goes under the upstream URL's
// parent path (so `/.well-known/oauth-protected-resource/mcp` maps too). Method, body and the
// client's headers are forwarded unchanged, Host and Origin included, so that the server's own
// Origin check is what the DNS-rebinding scenario sees. Responses are streamed back as they
// arrive (SSE passes through). One line per request goes to stdout; the token is never printed.
import http from 'node:http';

const [upstreamArg, portArg] = process.argv.slice(2);
const token = process.env.MCP_TOKEN;
if (!upstreamArg) {
  console.error('usage: MCP_TOKEN=... node auth-proxy.mjs <upstream MCP url> [port]');
  process.exit(2);
}
if (!token) {
  console.error('auth-proxy: MCP_TOKEN is not set');
  process.exit(2);
}
const upstream = new URL(upstreamArg);
if (upstream.protocol !== 'http:') {
  console.error(`auth-proxy: only http upstreams are supported, got ${upstream.protocol}`);
  process.exit(2);
}
const mcpPath = upstream.pathname.replace(/\/+$/, '');
const parentPath = mcpPath.replace(/\/[^/]*$/, '');
const port = Number(portArg ?? process.env.MCP_PROXY_PORT ?? 9180);

// Hop-by-hop headers (RFC 9110 7.6.1) are not forwarded; Node frames the bodies itself.
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function forwardable(rawHeaders) {
  // rawHeaders keeps the client's spelling and repeated headers: [name, value, name, value, ...]
  const out = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (!HOP.has(name.toLowerCase())) out.push([name, rawHeaders[i + 1]]);
  }
  return out;
}

function upstreamPath(reqUrl) {
  const q = reqUrl.indexOf('?');
  const path = q < 0 ? reqUrl : reqUrl.slice(0, q);
  const query = q < 0 ? '' : reqUrl.slice(q);
  if (path === '/mcp' || path.startsWith('/mcp/')) return mcpPath + path.slice('/mcp'.length) + query;
  return parentPath + path + query;
}

const agent = new http.Agent({ keepAlive: true });

const server = http.createServer((req, res) => {
  const headers = forwardable(req.rawHeaders).filter(([name]) => name.toLowerCase() !== 'authorization');
  headers.push(['Authorization', `Bearer ${token}`]);
  const path = upstreamPath(req.url);
  const up = http.request(
    {
      host: upstream.hostname,
      port: upstream.port || 80,
      method: req.method,
      path,
      headers: Object.fromEntries(groupHeaders(headers)),
      agent,
    },
    (upRes) => {
      const out = [];
      for (let i = 0; i < upRes.rawHeaders.length; i += 2) {
        const name = upRes.rawHeaders[i];
        if (!HOP.has(name.toLowerCase())) out.push(name, upRes.rawHeaders[i + 1]);
      }
      res.writeHead(upRes.statusCode, upRes.statusMessage, out);
      res.flushHeaders();
      console.log(`${req.method} ${req.url} -> ${path} ${upRes.statusCode}`);
      upRes.pipe(res);
      upRes.on('error', () => res.destroy());
    },
  );
  up.on('error', (e) => {
    console.log(`${req.method} ${req.url} -> ${path} upstream error: ${e.message}`);
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'bad_gateway', message: `auth-proxy: ${e.message}` } }));
    } else {
      res.destroy();
    }
  });
  // The client went away before the answer ended: drop the upstream request too.
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  req.pipe(up);
});

// Repeated request headers (rare in requests) are joined into one comma-separated value.
function groupHeaders(pairs) {
  const map = new Map();
  for (const [name, value] of pairs) {
    const key = [...map.keys()].find((k) => k.toLowerCase() === name.toLowerCase()) ?? name;
    map.set(key, map.has(key) ? `${map.get(key)}, ${value}` : value);
  }
  return map;
}

server.on('clientError', (err, socket) => socket.destroy(err));
server.listen(port, '127.0.0.1', () => {
  console.log(`ready http://127.0.0.1:${server.address().port}/mcp`);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.close();
    agent.destroy();
    process.exit(0);
  });
}
