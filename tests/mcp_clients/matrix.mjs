// The real-client matrix (ctest mcp.clients): each MCP client library in clients.mjs, over stdio
// (`codeact mcp`, behind stdio_tap.mjs) and over Streamable HTTP (`codeact serve` /mcp), must
//   1. list the tools and run execute_code with a program that calls the host tool `add` and
//      prints, with the exact stdout;
//   2. where the library offers cancellation: abort a time.sleep(30) call; the client's call ends
//      within 5 s of the abort and the server counts the run cancelled within 5 s (stdio: its
//      "was cancelled by the client" log line; HTTP: codeact_executions_total{outcome="cancelled"}
//      on /metrics);
//   3. where the library offers a progress callback: a run that prints over time is heard as
//      notifications/progress, numbered upwards, and still ends with its stdout.
// It records which revision each client negotiated and what it sent first (server/discover for
// the 2026-07-28 clients, initialize for the others), as seen on the wire, prints the matrix, and
// fails with every failed cell named. EXPECTED below lists what a cell is known to do instead
// (a library limit, with the reason); a cell that then behaves differently fails too, so the
// list stays true.
//
//   node matrix.mjs /path/to/codeact [client-name-substring]
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { clients, clientVersion } from './clients.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const binary = process.argv[2] || process.env.CODEACT_BINARY;
const only = process.argv[3] || '';
const toolsFile = join(here, '..', 'mcp_client', 'fixtures', 'tools.json');
const tap = join(here, 'stdio_tap.mjs');
const kCancelWithinMs = 5000;

if (!binary || !existsSync(binary)) {
  console.error(`FAILED: no codeact binary at '${binary}'`);
  process.exit(1);
}

// What a cell does other than the full behaviour, because of the client library. Keyed by
// "client name/transport".
const EXPECTED = {
  // The AI SDK's stdio transport has no notion of cancellation: an aborted call is rejected in
  // the client, and no notifications/cancelled is written: the run goes on until the server ends.
  'AI SDK/stdio': { cancel: 'client-only' },
};

const RUN_CODE = 'total = await call_tool("add", a=2, b=3)\nprint("sum:", total)';
const RUN_STDOUT = 'sum: 5\n';
const SLEEP_CODE = 'import time\ntime.sleep(30)\nprint("not cancelled")';
// `codeact serve` sends progress every 5 s; `codeact mcp` here every 0.5 s.
const PROGRESS = {
  stdio: { code: 'import time\nfor i in range(3):\n    print("tick", i, flush=True)\n    time.sleep(0.6)',
           stdout: 'tick 0\ntick 1\ntick 2\n', atLeast: 2 },
  http: { code: 'import time\nfor i in range(4):\n    print("tick", i, flush=True)\n    time.sleep(1.75)',
          stdout: 'tick 0\ntick 1\ntick 2\ntick 3\n', atLeast: 1 },
};

const scratch = mkdtempSync(join(tmpdir(), 'codeact-mcp-clients-'));
const serverTmp = join(scratch, 'tmp');
mkdirSync(serverTmp);

// --- what the HTTP clients send: every fetch in this process is recorded, then passed on. ----
const realFetch = globalThis.fetch;
const httpLog = [];
globalThis.fetch = async (input, init = {}) => {
  const url = typeof input === 'string' || input instanceof URL ? String(input) : input.url;
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  let body;
  if (typeof init.body === 'string') {
    try { body = JSON.parse(init.body); } catch { body = undefined; }
  }
  httpLog.push({ url, method: (init.method ?? input?.method ?? 'GET').toUpperCase(), headers, body });
  return realFetch(input, init);
};

// --- codeact serve, one for every HTTP cell -------------------------------------------------
let serveStderr = '';
const serve = spawn(binary, ['serve', '--listen', '127.0.0.1:0', '--tools', toolsFile,
                             '--token-rate', '1000', '--shutdown-grace', '0'],
                    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: serverTmp } });
serve.stderr.on('data', (c) => { serveStderr += c.toString(); });
const serveExited = new Promise((resolve) => serve.once('exit', (code, signal) => resolve(code ?? signal)));
const port = await new Promise((resolve, reject) => {
  let out = '';
  serve.stdout.on('data', (c) => {
    out += c.toString();
    const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m) resolve(Number(m[1]));
  });
  serve.once('exit', () => reject(new Error(`codeact serve ended before it listened:\n${serveStderr}`)));
}).catch((e) => { console.error(`FAILED: ${e.message}`); cleanup(); process.exit(1); });
const mcpUrl = `http://127.0.0.1:${port}/mcp`;

async function metric(name, labels = '') {
  const text = await (await realFetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(' ')[1]) : 0;
}
const cancelledRuns = () => metric('codeact_executions_total', '{outcome="cancelled"}');
const runsInFlight = () => metric('codeact_runs_in_flight');

function cleanup() {
  serve.kill('SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
}

// --- helpers ------------------------------------------------------------------------------
class CellFailure extends Error {}
function within(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => { timer = setTimeout(() => reject(new CellFailure(`${what}: nothing within ${ms} ms`)), ms); }),
  ]);
}
async function waitFor(predicate, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new CellFailure(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
function expect(condition, message, detail) {
  if (!condition) {
    throw new CellFailure(detail === undefined ? message : `${message}: ${JSON.stringify(detail)}`);
  }
}
const readLines = (path) => (existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : []);
const wireMessages = (path) => readLines(path).map((l) => JSON.parse(l));
const countIn = (path, needle) => (existsSync(path) ? readFileSync(path, 'utf8').split(needle).length - 1 : 0);

// The first request a client sent and the revision its later requests speak.
function stdioRevision(wirePath) {
  const wire = wireMessages(wirePath);
  const requests = wire.filter((w) => w.dir === 'in' && w.msg.method && w.msg.id !== undefined);
  const first = requests[0]?.msg.method ?? '?';
  const call = requests.find((w) => w.msg.method === 'tools/call');
  const meta = call?.msg.params?._meta?.['io.modelcontextprotocol/protocolVersion'];
  if (meta) return { first, revision: meta };
  const init = requests.find((w) => w.msg.method === 'initialize');
  const answer = wire.find((w) => w.dir === 'out' && init && w.msg.id === init.msg.id);
  return { first, revision: answer?.msg.result?.protocolVersion ?? '?' };
}
function httpRevision() {
  const posts = httpLog.filter((r) => r.method === 'POST' && r.body && r.body.method && r.body.id !== undefined);
  const call = posts.find((r) => r.body.method === 'tools/call');
  return { first: posts[0]?.body.method ?? '?', revision: call?.headers.get('mcp-protocol-version') ?? '?' };
}

// --- one cell -----------------------------------------------------------------------------
async function runCell(client, transport) {
  const key = `${client.name}/${transport}`;
  const expected = EXPECTED[key] ?? {};
  const cell = { key, client, transport, first: '?', revision: '?', run: 'FAILED', cancel: '-',
                 progress: '-', failures: [] };
  const wirePath = join(scratch, `${client.name.replace(/\W+/g, '_')}-${transport}.wire`);
  const stderrPath = `${wirePath}.stderr`;
  const target = transport === 'stdio'
    ? { transport, command: process.execPath,
        args: [tap, wirePath, stderrPath, '--', '/usr/bin/env', `TMPDIR=${serverTmp}`, binary, 'mcp',
               '--tools', toolsFile, '--progress-interval', '0.5', '--shutdown-grace', '0'] }
    : { transport, url: mcpUrl };
  httpLog.length = 0;
  let connection;
  const step = async (name, body) => {
    try {
      await body();
    } catch (e) {
      cell.failures.push(`${name}: ${e instanceof CellFailure ? e.message : e?.stack || e}`);
      return false;
    }
    return true;
  };
  const connected = await step('connect', async () => {
    connection = await within(client.connect(target), 30000, 'connect');
  });
  if (!connected) return finishCell(cell, wirePath, stderrPath, connection);

  await step('list and run', async () => {
    const names = await within(connection.toolNames(), 20000, 'tools/list');
    expect(names.includes('execute_code'), 'tools/list names execute_code', names);
    const result = await within(connection.run(RUN_CODE), 60000, 'execute_code');
    expect(result.stdout === RUN_STDOUT, `stdout is ${JSON.stringify(RUN_STDOUT)}`, result);
    expect(result.tool_calls === 1, 'the run made one host tool call', result);
    cell.run = 'ok';
  });
  const seen = transport === 'stdio' ? stdioRevision(wirePath) : httpRevision();
  Object.assign(cell, seen);

  if (client.offers.cancel) {
    await step('cancel', async () => {
      cell.cancel = 'FAILED';
      await checkCancel(connection, transport, expected, wirePath, stderrPath, cell);
    });
  }
  if (client.offers.progress) {
    await step('progress', async () => {
      cell.progress = 'FAILED';
      const { code, stdout, atLeast } = PROGRESS[transport];
      const ticks = [];
      const result = await within(connection.run(code, { onProgress: (p) => ticks.push(p) }), 60000,
                                  'the progress run');
      expect(result.stdout === stdout, `the progress run's stdout is ${JSON.stringify(stdout)}`, result);
      expect(ticks.length >= atLeast, `at least ${atLeast} progress notifications`, ticks);
      expect(ticks.every((t, i) => i === 0 || t.progress > ticks[i - 1].progress),
             'progress counts upwards', ticks);
      cell.progress = `${ticks.length} notification${ticks.length === 1 ? '' : 's'}`;
    });
  }
  return finishCell(cell, wirePath, stderrPath, connection);
}

async function checkCancel(connection, transport, expected, wirePath, stderrPath, cell) {
  const cancelledLine = 'was cancelled by the client';
  if (transport === 'http') {
    // A run counts as in flight until its worker is done, which can come after its client has the
    // answer: sampled then (under load), the gauge stays at that count while the sleep runs, the
    // earlier run leaving as it comes, and the call never seems to reach the server.
    await waitFor(async () => (await runsInFlight()) === 0, 20000,
                  'the earlier runs leaving the worker pool');
  }
  const before = transport === 'http' ? await cancelledRuns() : countIn(stderrPath, cancelledLine);
  const busyBefore = transport === 'http' ? await runsInFlight() : 0;
  const controller = new AbortController();
  const call = connection.run(SLEEP_CODE, { signal: controller.signal })
    .then((r) => ({ answered: r }), (e) => ({ rejected: e }));
  // Abort once the server has the call: on stdio once the tap passed the tools/call on, over HTTP
  // once the server runs it.
  await waitFor(async () => (transport === 'http'
    ? (await runsInFlight()) > busyBefore
    : wireMessages(wirePath).some((w) => w.dir === 'in' && w.msg.method === 'tools/call' &&
                                          w.msg.params?.arguments?.code === SLEEP_CODE)),
                20000, 'the time.sleep(30) call reaching the server');
  const abortAt = Date.now();
  controller.abort(new Error('the user pressed stop'));
  const outcome = await within(call, kCancelWithinMs, 'the aborted call ending at the client');
  const clientMs = Date.now() - abortAt;
  expect(outcome.rejected !== undefined, 'the aborted call is rejected at the client', outcome.answered);
  const sentCancel = () => (transport === 'stdio'
    ? wireMessages(wirePath).some((w) => w.dir === 'in' && w.msg.method === 'notifications/cancelled')
    : httpLog.some((r) => r.body?.method === 'notifications/cancelled'));
  if (expected.cancel === 'client-only') {
    // The library's limit, as EXPECTED says: nothing reached the server, whose run goes on.
    const stillRunning = transport === 'http'
      ? (await cancelledRuns()) === before && (await runsInFlight()) > busyBefore
      : countIn(stderrPath, cancelledLine) === before;
    expect(!sentCancel() && stillRunning,
           'EXPECTED says this client cancels only at the client, but the server heard: update EXPECTED');
    cell.cancel = `client only (${clientMs} ms; the server is not told)`;
    return;
  }
  await waitFor(async () => (transport === 'http'
    ? (await cancelledRuns()) > before
    : countIn(stderrPath, cancelledLine) > before),
                Math.max(0, kCancelWithinMs - (Date.now() - abortAt)),
                transport === 'http' ? 'codeact_executions_total{outcome="cancelled"} counting the run'
                                     : `the server logging "${cancelledLine}"`);
  // How the server heard: over HTTP a client may send notifications/cancelled or close the stream.
  const how = sentCancel() ? 'notifications/cancelled' : 'stream closed';
  cell.cancel = `ok, ${how} (${Date.now() - abortAt} ms)`;
}

async function finishCell(cell, wirePath, stderrPath, connection) {
  if (connection) {
    try {
      await within(Promise.resolve(connection.close()), 15000, 'close');
    } catch (e) {
      cell.failures.push(`close: ${e?.message || e}`);
    }
  }
  if (cell.failures.length && cell.transport === 'stdio' && existsSync(stderrPath)) {
    cell.serverLog = readFileSync(stderrPath, 'utf8').split('\n').slice(-15).join('\n');
  }
  return cell;
}

// --- the matrix -----------------------------------------------------------------------------
const cells = [];
for (const client of clients.filter((c) => c.name.toLowerCase().includes(only.toLowerCase()))) {
  for (const transport of ['stdio', 'http']) {
    const started = Date.now();
    const cell = await runCell(client, transport);
    cell.seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`${cell.failures.length ? 'FAIL' : 'ok  '} ${cell.key} (${cell.seconds} s)`);
    for (const f of cell.failures) console.log(`       ${f.split('\n').join('\n       ')}`);
    if (cell.serverLog) console.log(`       --- codeact mcp stderr ---\n${cell.serverLog}`);
    cells.push(cell);
  }
}

const rows = [['client', 'version', 'transport', 'first request', 'revision', 'list + run', 'cancel', 'progress']];
for (const c of cells) {
  rows.push([c.client.name, clientVersion(c.client), c.transport, c.first, c.revision, c.run, c.cancel, c.progress]);
}
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
console.log('');
for (const [i, r] of rows.entries()) {
  console.log(r.map((v, j) => String(v).padEnd(widths[j])).join(' | '));
  if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
}
const failed = cells.filter((c) => c.failures.length);
serve.kill('SIGTERM');
const serveCode = await Promise.race([serveExited, new Promise((r) => setTimeout(() => r('timeout'), 20000))]);
if (serveCode !== 0) {
  console.log(`FAILED: codeact serve did not exit 0 on SIGTERM (${serveCode})\n${serveStderr.slice(-2000)}`);
  serve.kill('SIGKILL');
}
if (!process.env.MCP_CLIENTS_KEEP) rmSync(scratch, { recursive: true, force: true });
else console.log(`kept ${scratch}`);
if (failed.length || serveCode !== 0) {
  console.log(`\nFAILED: ${failed.length} of ${cells.length} cells: ${failed.map((c) => c.key).join(', ')}`);
  process.exit(1);
}
console.log(`\nall ${cells.length} cells passed`);
process.exit(0);
