// Interop test: the official TypeScript MCP client (@modelcontextprotocol/client, pinned to
// protocol revision 2026-07-28) against our MCP server, plus the unauthenticated path checked
// with a plain fetch (401, WWW-Authenticate resource_metadata, protected-resource document).
//
//   MCP_TOKEN=<bearer jwt> node interop.mjs [url]     (url defaults to $MCP_URL)
//
// Prints one ✓ line per assertion; exits 1 with the failing assertion's message otherwise.
// The token is never printed.
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport, SdkHttpError } from '@modelcontextprotocol/client';

const PROTOCOL = '2026-07-28';
const url = process.argv[2] || process.env.MCP_URL;
const token = process.env.MCP_TOKEN;
if (!url) fail('no MCP URL: pass it as the first argument or set MCP_URL');
if (!token) fail('MCP_TOKEN is not set');

function fail(message) {
  console.error(`✗ interop: ${message}`);
  process.exit(1);
}

let step = 'start';
function ok(what) {
  console.log(`✓ ${what}`);
}

function newClient() {
  return new Client({ name: 'interop-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: PROTOCOL } } });
}

async function connect(withToken) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    authProvider: withToken ? { token: async () => token } : undefined,
  });
  const client = newClient();
  await client.connect(transport);
  return client;
}

// The UTC date `days` from today (YYYY-MM-DD), as the project's other scripts compute it.
function isoDateFromToday(days) {
  return new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
}

function textOf(result) {
  return (result.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

async function main() {
  step = 'connect with a token';
  const client = await connect(true);
  ok(`connected to ${url} (protocol ${PROTOCOL})`);

  try {
    step = 'tools/list';
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ['search_flights', 'search_knowledge_base']) {
      const tool = byName.get(name);
      assert.ok(tool, `tools/list has no ${name} (got: ${[...byName.keys()].join(', ')})`);
      assert.equal(tool.inputSchema?.type, 'object', `${name}.inputSchema.type is not "object"`);
      assert.equal(tool.outputSchema?.type, 'object', `${name} has no object outputSchema`);
    }
    // With an outputSchema listed, the SDK's callTool validates every structuredContent
    // against it and throws on a mismatch or on a success without one.
    ok(`listTools has search_flights and search_knowledge_base with object input and output schemas (${tools.length} tools)`);

    const args = { origin: 'FRA', destination: 'JFK', depart_date: isoDateFromToday(60), cabin: 'BUSINESS' };

    step = 'tools/call search_flights';
    const first = await client.callTool({ name: 'search_flights', arguments: args });
    assert.equal(first.isError ?? false, false, `search_flights returned isError: ${textOf(first).slice(0, 300)}`);
    const sc = first.structuredContent;
    assert.ok(sc && typeof sc === 'object', 'search_flights returned no structuredContent');
    assert.ok(sc.seatsResult && typeof sc.seatsResult === 'object', 'structuredContent has no seatsResult');
    assert.ok('cashResult' in sc, 'structuredContent has no cashResult');
    // seatsResult.results is { count, flights: [...] }
    const flights = sc.seatsResult.results?.flights;
    assert.ok(
      Array.isArray(flights) && flights.length > 0 && sc.seatsResult.results.count === flights.length,
      `structuredContent.seatsResult.results has no flights: ${JSON.stringify(sc.seatsResult.results)?.slice(0, 200)}`,
    );
    const meta = first._meta ?? {};
    assert.equal(meta['tool-calling/status'], 'succeeded', `_meta tool-calling/status is ${meta['tool-calling/status']}`);
    assert.equal(meta['tool-calling/deduplicated'], false, 'first call is already marked deduplicated (reused user id?)');
    assert.ok(typeof meta['tool-calling/jobId'] === 'string' && meta['tool-calling/jobId'], '_meta has no tool-calling/jobId');
    ok(
      `callTool search_flights FRA→JFK Business ${args.depart_date}: isError false, ` +
        `${flights.length} seatsResult flights, status succeeded`,
    );

    step = 'tools/call search_flights (identical, again)';
    const second = await client.callTool({ name: 'search_flights', arguments: args });
    assert.equal(second.isError ?? false, false, `second call returned isError: ${textOf(second).slice(0, 300)}`);
    const meta2 = second._meta ?? {};
    assert.equal(meta2['tool-calling/deduplicated'], true, `second identical call: tool-calling/deduplicated is ${meta2['tool-calling/deduplicated']}`);
    assert.equal(meta2['tool-calling/jobId'], meta['tool-calling/jobId'], 'second identical call has another jobId');
    ok('identical second call is deduplicated with the same jobId');

    step = 'tools/call search_flights (invalid arguments)';
    let bad;
    try {
      bad = await client.callTool({ name: 'search_flights', arguments: { ...args, origin: 'X' } });
    } catch (e) {
      assert.fail(`invalid arguments gave a protocol error instead of a tool error: ${e?.message ?? e}`);
    }
    assert.equal(bad.isError, true, 'invalid arguments did not give isError: true');
    const badText = textOf(bad);
    assert.ok(badText.trim().length > 0, 'invalid arguments: the error result has no text content');
    ok(`invalid arguments (origin "X") give isError true with text: ${JSON.stringify(badText.slice(0, 120))}`);

    step = 'tools/call search_knowledge_base';
    const kb = await client.callTool({ name: 'search_knowledge_base', arguments: { query: 'How much baggage can I take?' } });
    assert.equal(kb.isError ?? false, false, `search_knowledge_base returned isError: ${textOf(kb).slice(0, 300)}`);
    const passages = kb.structuredContent?.results;
    assert.ok(Array.isArray(passages) && passages.length > 0, 'search_knowledge_base: structuredContent has no results');
    ok(`callTool search_knowledge_base: ${passages.length} passages, structuredContent valid against its outputSchema`);
  } finally {
    await client.close().catch(() => {});
  }

  step = 'connect without a token';
  let err;
  try {
    const c = await connect(false);
    await c.close().catch(() => {});
  } catch (e) {
    err = e;
  }
  assert.ok(err, 'connecting without a token succeeded');
  assert.ok(
    err instanceof SdkHttpError && err.code === 'CLIENT_HTTP_AUTHENTICATION' && err.data?.status === 401,
    `connecting without a token failed with something other than the SDK's 401 error: ` +
      `${err?.constructor?.name} ${err?.code} ${err?.message}`,
  );
  ok(`connect without a token fails: SdkHttpError ${err.code} (HTTP ${err.data.status})`);

  step = 'plain POST without a token';
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL,
      'mcp-method': 'tools/list',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
      params: { _meta: { 'io.modelcontextprotocol/protocolVersion': PROTOCOL, 'io.modelcontextprotocol/clientCapabilities': {} } },
    }),
  });
  await res.arrayBuffer();
  assert.equal(res.status, 401, `POST without a token: HTTP ${res.status}, expected 401`);
  const challenge = res.headers.get('www-authenticate') ?? '';
  assert.match(challenge, /^Bearer\b/i, `401 WWW-Authenticate is not a Bearer challenge: ${JSON.stringify(challenge)}`);
  const m = /resource_metadata="([^"]+)"/.exec(challenge);
  assert.ok(m, `401 WWW-Authenticate has no resource_metadata="...": ${JSON.stringify(challenge)}`);
  ok(`POST without a token: 401, WWW-Authenticate Bearer resource_metadata="${m[1]}"`);

  step = 'GET protected-resource metadata';
  const prm = await fetch(m[1], { headers: { accept: 'application/json' } });
  assert.equal(prm.status, 200, `GET ${m[1]}: HTTP ${prm.status}`);
  const doc = await prm.json();
  assert.equal(doc.resource, url, `protected-resource metadata: resource ${JSON.stringify(doc.resource)} is not the MCP URL`);
  assert.ok(
    Array.isArray(doc.authorization_servers) && doc.authorization_servers.length > 0,
    'protected-resource metadata has no authorization_servers',
  );
  ok(`protected-resource metadata: resource equals the MCP URL, ${doc.authorization_servers.length} authorization server(s)`);
}

try {
  await main();
  console.log('interop: all assertions passed');
} catch (e) {
  const msg = e instanceof assert.AssertionError ? e.message : `${e?.constructor?.name ?? 'Error'}: ${e?.message ?? e}`;
  fail(`${step}: ${msg}`);
}
