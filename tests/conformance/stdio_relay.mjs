// A pass-through relay that puts `codeact mcp` (stdio) behind Streamable HTTP, so that the MCP
// conformance suite, which speaks only HTTP, can test the stdio server (ctest
// mcp.conformance_stdio). It adds no MCP behaviour of its own: every JSON-RPC message goes to a
// `codeact mcp` process as one line and every line that process writes comes back.
//
//   node stdio_relay.mjs [--session-idle S] -- /path/to/codeact mcp ARGS...
//   prints "stdio relay: listening on http://127.0.0.1:PORT/mcp" once it listens
//
// - `initialize` starts a `codeact mcp` process of its own: one process per MCP session, as one
//   stdio connection per client. A successful answer carries a new Mcp-Session-Id, which later
//   requests must send (missing: 400; unknown: 404); DELETE ends the process (end of input), and
//   so does a session left without a request for --session-idle seconds (default 1: the suite's
//   clients close without DELETE, and each `codeact mcp` holds an interpreter).
//   A request whose params._meta names a protocol version (the stateless 2026-07-28 revision)
//   goes to one shared process without a session.
// - Request ids are renumbered per process (two HTTP requests may reuse an id) and restored in the
//   answer; notifications/cancelled is renumbered the same way.
// - The answer is JSON, or for a tools/call whose client accepts text/event-stream an SSE stream
//   with the call's notifications/progress (matched by progressToken) and the answer last; other
//   notifications go to the newest call in flight of that session. A client that closes the
//   stream before the answer cancels the call (notifications/cancelled to the process).
// - Not carried: JSON-RPC batches (answered -32600), GET streams (405), and the HTTP transport's
//   own checks (Host/Origin, MCP-Protocol-Version headers): those belong to `codeact serve`, which
//   mcp.conformance tests.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';

const dashes = process.argv.indexOf('--');
const command = process.argv.slice(dashes + 1);
const options = process.argv.slice(2, dashes < 0 ? undefined : dashes);
const idleSeconds = options[0] === '--session-idle' ? Number(options[1]) : 1;
if (dashes < 0 || command.length === 0 || !(idleSeconds > 0) ||
    (options.length !== 0 && options.length !== 2)) {
  process.stderr.write('usage: stdio_relay.mjs [--session-idle S] -- COMMAND ARGS...\n');
  process.exit(2);
}
const kMaxBodyBytes = 8 << 20;

// One `codeact mcp` process and the requests it has not answered yet.
class StdioServer {
  constructor(label) {
    this.label = label;
    this.nextId = 1;
    this.pending = new Map();  // relay id -> { originalId, onMessage, onAnswer, token }
    this.exited = false;
    this.lastUsed = Date.now();
    this.child = spawn(command[0], command.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
    this.child.stdin.on('error', () => {});  // an exited server fails its requests below
    let buffer = '';
    this.child.stdout.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      let end;
      while ((end = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 1);
        if (line.trim()) this.fromServer(line);
      }
    });
    this.child.on('exit', (code, signal) => {
      this.exited = true;
      for (const entry of this.pending.values()) {
        entry.onAnswer(null, `codeact mcp (${label}) exited (${code ?? signal}) before answering`);
      }
      this.pending.clear();
    });
  }

  // Sends a request; `onMessage(notification)` hears what belongs to it, `onAnswer(message)` ends it.
  request(message, handlers) {
    this.lastUsed = Date.now();
    const relayId = this.nextId++;
    const token = message.params?._meta?.progressToken;
    this.pending.set(relayId, { originalId: message.id, token, ...handlers });
    this.write({ ...message, id: relayId });
    return relayId;
  }

  notify(message) {
    this.lastUsed = Date.now();
    if (message.method === 'notifications/cancelled') {
      const params = message.params ?? {};
      for (const [relayId, entry] of this.pending) {
        if (JSON.stringify(entry.originalId) === JSON.stringify(params.requestId)) {
          this.write({ ...message, params: { ...params, requestId: relayId } });
          return;
        }
      }
    }
    this.write(message);
  }

  // The HTTP client went away before the answer: the run is cancelled, as closing the stream of
  // `codeact serve` cancels it.
  abandon(relayId) {
    if (!this.pending.delete(relayId)) return;
    this.write({ jsonrpc: '2.0', method: 'notifications/cancelled',
                 params: { requestId: relayId, reason: 'the HTTP client closed the stream' } });
  }

  write(message) {
    if (!this.exited) this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  idle(now) {
    return this.pending.size === 0 && now - this.lastUsed > idleSeconds * 1000;
  }

  fromServer(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      process.stderr.write(`stdio relay: ${this.label} wrote a line that is not JSON: ${line}\n`);
      return;
    }
    if (message.id !== undefined && message.id !== null && !message.method) {
      const entry = this.pending.get(message.id);
      if (!entry) return;  // an answer to a call the client gave up
      this.pending.delete(message.id);
      entry.onAnswer({ ...message, id: entry.originalId });
      return;
    }
    if (message.method && message.id === undefined) {
      const token = message.params?.progressToken;
      const entries = [...this.pending.values()];
      const owner = token !== undefined
        ? entries.find((e) => e.token !== undefined && JSON.stringify(e.token) === JSON.stringify(token))
        : entries[entries.length - 1];
      owner?.onMessage(message);
    }
  }

  end() {
    if (!this.exited) this.child.stdin.end();
    return new Promise((resolve) => {
      if (this.exited) return resolve();
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10000);
      this.child.once('exit', () => { clearTimeout(timer); resolve(); });
    });
  }
}

const sessions = new Map();  // Mcp-Session-Id -> StdioServer
let stateless = null;
const sweeper = setInterval(() => {
  const now = Date.now();
  for (const [id, server] of sessions) {
    if (server.idle(now)) {
      sessions.delete(id);
      server.end();
    }
  }
  if (stateless?.idle(now)) {
    stateless.end();
    stateless = null;
  }
}, 250);

function reply(res, status, body, headers = {}) {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(body === undefined ? undefined : JSON.stringify(body));
}
const rpcError = (id, code, message) => ({ jsonrpc: '2.0', id: id ?? null, error: { code, message } });

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > kMaxBodyBytes) reject(new Error('body too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handlePost(req, res) {
  let message;
  try {
    message = JSON.parse(await readBody(req));
  } catch (e) {
    return reply(res, 400, rpcError(null, -32700, `Parse error: ${e.message}`));
  }
  if (Array.isArray(message)) {
    return reply(res, 400, rpcError(null, -32600, 'the stdio relay does not carry JSON-RPC batches'));
  }
  const isInitialize = message?.method === 'initialize';
  const sessionId = req.headers['mcp-session-id'];
  let server;
  let newSessionId;
  if (isInitialize) {
    newSessionId = `relay_${randomBytes(12).toString('hex')}`;
    server = new StdioServer(`session ${newSessionId}`);
  } else if (message?.params?._meta?.['io.modelcontextprotocol/protocolVersion'] !== undefined) {
    stateless ??= new StdioServer('stateless');
    server = stateless;
  } else if (!sessionId) {
    return reply(res, 400, rpcError(message?.id, -32600, 'Mcp-Session-Id header required'));
  } else {
    server = sessions.get(sessionId);
    if (!server) return reply(res, 404, rpcError(message?.id, -32600, 'no such MCP session'));
  }

  if (message?.method === undefined || message.id === undefined) {
    // A notification (or a response to a server request): nothing comes back.
    server.notify(message);
    return reply(res, 202);
  }
  const accept = String(req.headers.accept ?? '');
  const stream = message.method === 'tools/call' && accept.includes('text/event-stream');
  let answered = false;
  let started = false;
  const startStream = () => {
    if (started) return;
    started = true;
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  };
  const relayId = server.request(message, {
    onMessage: (notification) => {
      if (!stream) return;
      startStream();
      res.write(`event: message\ndata: ${JSON.stringify(notification)}\n\n`);
    },
    onAnswer: (answer, failure) => {
      answered = true;
      if (!answer) {
        if (isInitialize) server.end();
        if (started) return res.end();
        return reply(res, 502, rpcError(message.id, -32603, failure));
      }
      if (isInitialize) {
        if (answer.error) {
          server.end();
        } else {
          sessions.set(newSessionId, server);
        }
      }
      const headers = isInitialize && !answer.error ? { 'Mcp-Session-Id': newSessionId } : {};
      if (stream) {
        startStream();
        res.end(`event: message\ndata: ${JSON.stringify(answer)}\n\n`);
      } else {
        reply(res, 200, answer, headers);
      }
    },
  });
  // The stream opens at once: a client waiting for the response headers hears it is accepted.
  if (stream && !answered) startStream();
  res.on('close', () => {
    if (!answered) server.abandon(relayId);
  });
}

const httpServer = http.createServer((req, res) => {
  const path = new URL(req.url, 'http://relay').pathname;
  if (path !== '/mcp') return reply(res, 404, { error: 'not found' });
  if (req.method === 'POST') {
    handlePost(req, res).catch((e) => {
      if (!res.headersSent) reply(res, 500, rpcError(null, -32603, `stdio relay: ${e.message}`));
    });
    return;
  }
  if (req.method === 'DELETE') {
    const server = sessions.get(req.headers['mcp-session-id']);
    if (!server) return reply(res, 404, rpcError(null, -32600, 'no such MCP session'));
    sessions.delete(req.headers['mcp-session-id']);
    server.end().then(() => reply(res, 200, { closed: true }));
    return;
  }
  reply(res, 405, rpcError(null, -32600, 'POST or DELETE'), { Allow: 'POST, DELETE' });
});

async function shutdown() {
  clearInterval(sweeper);
  httpServer.close();
  const all = [...sessions.values(), ...(stateless ? [stateless] : [])];
  await Promise.all(all.map((s) => s.end()));
  process.exit(0);
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

httpServer.listen(0, '127.0.0.1', () => {
  console.log(`stdio relay: listening on http://127.0.0.1:${httpServer.address().port}/mcp`);
});
