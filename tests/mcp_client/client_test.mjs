// Drives `codeact mcp` with the official MCP TypeScript SDK client over stdio.
//
//   node client_test.mjs /path/to/codeact        (or CODEACT_BINARY=/path/to/codeact)
//
// Needs `npm ci` in this directory first (.ci/setup does it). Exits 0 when every check passed,
// 1 with the failed check and the server's stderr otherwise.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const binary = process.argv[2] || process.env.CODEACT_BINARY;
const toolsFile = join(here, 'fixtures', 'tools.json');
const deadlineMs = Number(process.env.MCP_TEST_DEADLINE_MS || 120000);

function fail(message) {
  console.error(`FAILED: ${message}`);
  if (serverStderr) console.error(`--- codeact mcp stderr ---\n${serverStderr}`);
  process.exit(1);
}

let serverStderr = '';

if (!binary) fail('no codeact binary: pass its path as the first argument or set CODEACT_BINARY');
if (!existsSync(binary)) fail(`codeact binary not found at ${binary}`);
if (!existsSync(join(here, 'node_modules', '@modelcontextprotocol', 'sdk'))) {
  fail('tests/mcp_client/node_modules is missing: run .ci/setup (npm ci in tests/mcp_client)');
}

const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');

function check(condition, message, detail) {
  if (!condition) fail(detail === undefined ? message : `${message}\n${JSON.stringify(detail, null, 2)}`);
  console.log(`ok - ${message}`);
}

const timer = setTimeout(() => fail(`no result within ${deadlineMs} ms`), deadlineMs);

// The SDK passes the server only a few variables of its own environment (PATH, HOME, ...);
// TMPDIR too: an unprivileged user's scratch directories may have no other place.
const { getDefaultEnvironment } = await import('@modelcontextprotocol/sdk/client/stdio.js');
const env = getDefaultEnvironment();
if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
const transport = new StdioClientTransport({
  command: binary,
  args: ['mcp', '--tools', toolsFile, '--progress-interval', '0.5'],
  env,
  stderr: 'pipe',
});
transport.stderr?.on('data', (chunk) => {
  serverStderr += chunk.toString();
});
const client = new Client({ name: 'codeact-mcp-client-test', version: '1.0.0' });

try {
  await client.connect(transport);
} catch (e) {
  fail(`connect/initialize failed: ${e?.stack || e}`);
}
check(client.getServerVersion()?.name === 'codeact', 'serverInfo.name is codeact', client.getServerVersion());
check(typeof client.getInstructions() === 'string' && client.getInstructions().length > 0,
      'initialize carries instructions');
check(client.getServerCapabilities()?.tools !== undefined, 'server declares the tools capability',
      client.getServerCapabilities());

// Watch the server's exit code: end of input must end it with 0 (SDK internals; optional).
let exitCode;
const serverProcess = transport._process;
const exited = serverProcess
  ? new Promise((resolve) => serverProcess.once('exit', (code, signal) => { exitCode = code ?? signal; resolve(); }))
  : null;

const { tools } = await client.listTools();
check(Array.isArray(tools) && tools.length === 1 && tools[0].name === 'execute_code',
      'tools/list returns exactly execute_code', tools.map((t) => t.name));
check(tools[0].inputSchema?.required?.includes('code'), 'execute_code requires "code"', tools[0].inputSchema);
check(tools[0].description.includes('add'), 'the description lists the host tool "add"');

// A run that calls the command tool from inside the code.
const ok = await client.callTool({
  name: 'execute_code',
  arguments: { code: 'total = await call_tool("add", a=2, b=3)\nprint("sum:", total)\ntotal * 10' },
});
const sc = ok.structuredContent;
check(sc && sc.success === true, 'structuredContent.success is true', ok);
check(ok.isError === false, 'isError is false', ok);
check(sc.stdout === 'sum: 5\n', 'stdout is "sum: 5\\n"', sc);
check(sc.tool_calls === 1, 'tool_calls is 1', sc);
check(sc.output === 50 && sc.output_present === true, 'the final expression is the output', sc);
check(ok.content?.[0]?.type === 'text' && JSON.parse(ok.content[0].text).stdout === 'sum: 5\n',
      'the text content is the result JSON', ok.content);

// A run whose code raises: a tool error the model can read, not a protocol error.
const bad = await client.callTool({
  name: 'execute_code',
  arguments: { code: 'print("about to fail")\n1 / 0' },
});
check(bad.isError === true, 'a raising run has isError true', bad);
check(bad.structuredContent?.success === false && bad.structuredContent?.outcome === 'error',
      'structuredContent says outcome "error"', bad.structuredContent);
check(bad.structuredContent?.error?.type === 'ZeroDivisionError', 'the error type is ZeroDivisionError',
      bad.structuredContent?.error);
check(bad.content?.[0]?.text.includes('ZeroDivisionError'), 'the text content shows the error', bad.content);

// Missing arguments come back as the provider's argument error (a tool result).
const noArgs = await client.callTool({ name: 'execute_code', arguments: {} });
check(noArgs.isError === true && noArgs.structuredContent?.violations?.[0]?.rule === 'argument-error',
      'missing "code" is an argument-error result', noArgs);

// An unknown tool name is a JSON-RPC error -32602.
let unknownError;
try {
  await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } });
} catch (e) {
  unknownError = e;
}
check(unknownError?.code === -32602, 'an unknown tool is error -32602', unknownError && String(unknownError));

// Several calls at once: each answer belongs to its own request.
const many = await Promise.all([1, 2, 3, 4, 5, 6].map((n) =>
  client.callTool({ name: 'execute_code', arguments: { code: `print(await add(a=${n}, b=100))` } })));
check(many.every((r, i) => r.structuredContent?.stdout === `${i + 101}\n`),
      'concurrent calls each get their own result', many.map((r) => r.structuredContent?.stdout));

// Progress: a 4 s run under a 2.5 s request timeout completes, because each progress
// notification restarts the SDK's clock (resetTimeoutOnProgress; samples/mcp/long_calls.mjs).
const { callWithProgress } = await import('../../samples/mcp/long_calls.mjs');
const progress = [];
const slow = await callWithProgress(client, 'import time\ntime.sleep(4)\nprint("slow")', {
  timeoutMs: 2500,
  onProgress: (p) => progress.push(p),
});
check(slow.structuredContent?.stdout === 'slow\n', 'a run longer than the timeout ends, kept alive by progress',
      slow.structuredContent);
check(progress.length >= 3 && progress.every((p, i) => p.progress === i + 1),
      'progress notifications arrive, numbered 1, 2, 3, ...', progress);

// Cancellation (issue "Checked by"): with 6 cancelled time.sleep(30) calls in flight (4 running,
// 2 queued), a print(1) is answered within 3 s.
const controllers = [1, 2, 3, 4, 5, 6].map(() => new AbortController());
const inFlight = new Set();
let allInFlight;
const everyCallSeen = new Promise((resolve) => { allInFlight = resolve; });
const sleepers = controllers.map((controller, i) =>
  callWithProgress(client, 'import time\ntime.sleep(30)', {
    signal: controller.signal,
    onProgress: () => { inFlight.add(i); if (inFlight.size === 6) allInFlight(); },
  }).then(() => 'answered', (e) => `rejected: ${e?.name || e}`));
await everyCallSeen;  // every call has reached the server (its progress arrives)
for (const controller of controllers) controller.abort('the user pressed stop');
const outcomes = await Promise.all(sleepers);
check(outcomes.every((o) => o.startsWith('rejected')), 'the 6 cancelled calls end at the client', outcomes);
const cancelAt = Date.now();
const quick = await client.callTool({ name: 'execute_code', arguments: { code: 'print(1)' } });
const quickMs = Date.now() - cancelAt;
check(quick.structuredContent?.stdout === '1\n' && quickMs < 3000,
      `print(1) after 6 cancelled sleeps is answered within 3 s (${quickMs} ms)`, quick.structuredContent);

await client.close();
if (exited) {
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10000))]);
  check(exitCode === 0, 'the server exits 0 at end of input', { exitCode });
  const unanswered = serverStderr.split('was cancelled by the client: not answered').length - 1;
  check(unanswered === 6, 'the server logged 6 cancelled calls and answered none of them', { unanswered });
}
clearTimeout(timer);
console.log('all MCP client checks passed');
process.exit(0);
