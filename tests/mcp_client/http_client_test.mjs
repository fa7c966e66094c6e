// Drives `codeact serve`'s /mcp with the official MCP TypeScript SDK's
// StreamableHTTPClientTransport: initialize (Mcp-Session-Id), tools/list, tools/call (a run, a
// named session keeping state, an error), a wrong token refused, the session ended with DELETE,
// and the server's exit 0 on SIGTERM.
//
//   node http_client_test.mjs /path/to/codeact        (or CODEACT_BINARY=/path/to/codeact)
//
// Exits 0 when every check passed, 1 with the failed check and the server's stderr otherwise.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const binary = process.argv[2] || process.env.CODEACT_BINARY;
const deadlineMs = Number(process.env.MCP_TEST_DEADLINE_MS || 120000);
let serverStderr = '';
let server;
const scratch = mkdtempSync(join(tmpdir(), 'codeact-http-mcp-'));

function fail(message) {
  console.error(`FAILED: ${message}`);
  if (serverStderr) console.error(`--- codeact serve stderr ---\n${serverStderr}`);
  server?.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
  process.exit(1);
}
function check(condition, message, detail) {
  if (!condition) fail(detail === undefined ? message : `${message}\n${JSON.stringify(detail, null, 2)}`);
  console.log(`ok - ${message}`);
}

if (!binary) fail('no codeact binary: pass its path as the first argument or set CODEACT_BINARY');
if (!existsSync(binary)) fail(`codeact binary not found at ${binary}`);
if (!existsSync(join(here, 'node_modules', '@modelcontextprotocol', 'sdk'))) {
  fail('tests/mcp_client/node_modules is missing: run .ci/setup (npm ci in tests/mcp_client)');
}
const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');

const timer = setTimeout(() => fail(`no result within ${deadlineMs} ms`), deadlineMs);
const token = 'http-mcp-test-token-0123456789';
writeFileSync(join(scratch, 'tokens'), `${token}\n`);

server = spawn(binary, ['serve', '--listen', '127.0.0.1:0', '--token-file', join(scratch, 'tokens'),
                        '--isolation', 'process'],
               { stdio: ['ignore', 'pipe', 'pipe'] });
server.stderr.on('data', (chunk) => { serverStderr += chunk.toString(); });
const exited = new Promise((resolve) => server.once('exit', (code, signal) => resolve(code ?? signal)));
let listening = false;
const port = await new Promise((resolve) => {
  let out = '';
  server.stdout.on('data', (chunk) => {
    out += chunk.toString();
    const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m && !listening) {
      listening = true;
      resolve(Number(m[1]));
    }
  });
  server.once('exit', () => { if (!listening) fail('codeact serve ended before it listened'); });
});
const url = new URL(`http://127.0.0.1:${port}/mcp`);

// A wrong token: the transport's first POST is refused with 401.
{
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: 'Bearer wrong-token-0123456789' } },
  });
  const client = new Client({ name: 'codeact-http-test-bad', version: '1.0.0' });
  let error;
  try {
    await client.connect(transport);
  } catch (e) {
    error = e;
  }
  check(error !== undefined && (error.code === 401 || String(error).includes('unknown bearer token')),
        'a wrong token cannot initialize (401)', `${error} (code ${error?.code})`);
}

const transport = new StreamableHTTPClientTransport(url, {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'codeact-http-test', version: '1.0.0' });
try {
  await client.connect(transport);
} catch (e) {
  fail(`connect/initialize failed: ${e?.stack || e}`);
}
check(typeof transport.sessionId === 'string' && transport.sessionId.length > 0,
      'initialize issued an Mcp-Session-Id', transport.sessionId);
check(client.getServerVersion()?.name === 'codeact', 'serverInfo.name is codeact', client.getServerVersion());

const { tools } = await client.listTools();
check(tools.length === 1 && tools[0].name === 'execute_code', 'tools/list returns execute_code',
      tools.map((t) => t.name));

const ok = await client.callTool({ name: 'execute_code', arguments: { code: 'print("hi")\n6 * 7' } });
check(ok.isError === false && ok.structuredContent?.stdout === 'hi\n' && ok.structuredContent?.output === 42,
      'tools/call runs the code', ok.structuredContent);

const bad = await client.callTool({ name: 'execute_code', arguments: { code: '1 / 0' } });
check(bad.isError === true && bad.structuredContent?.error?.type === 'ZeroDivisionError',
      'a raising run is a tool error', bad.structuredContent);

const first = await client.callTool({ name: 'execute_code', arguments: { code: 'x = 20', session: 'work' } });
if (first.structuredContent?.outcome === 'setup_error') {
  console.log(`skip - sessions unavailable here: ${first.structuredContent?.message}`);
} else {
  const second = await client.callTool({ name: 'execute_code', arguments: { code: 'x * 2 + 2', session: 'work' } });
  check(second.structuredContent?.output === 42 && second.structuredContent?.session_state === 'kept',
        'a named session keeps its variables over HTTP', second.structuredContent);
}

// A request with a made-up session id is 404, as the transport's specification says.
const stray = await fetch(url, {
  method: 'POST',
  headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json',
             Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': 'mcp_unknown' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
});
check(stray.status === 404, 'an unknown Mcp-Session-Id is 404', stray.status);

const sessionId = transport.sessionId;
await transport.terminateSession();
const after = await fetch(url, {
  method: 'POST',
  headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json',
             Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sessionId },
  body: JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/list' }),
});
check(after.status === 404, 'DELETE ended the MCP session', after.status);
await client.close();

server.kill('SIGTERM');
const code = await exited;
check(code === 0, 'codeact serve exits 0 on SIGTERM', code);
clearTimeout(timer);
rmSync(scratch, { recursive: true, force: true });
console.log('all checks passed');
