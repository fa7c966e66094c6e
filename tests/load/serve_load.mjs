// A load test of `codeact serve`: N concurrent clients, each with its own kept-alive
// connection, POST /v1/execute back to back for a fixed number of requests; prints p50, p90,
// p99 and max latency, requests/s and the outcome counts as one JSON object.
//
//   node serve_load.mjs --url http://127.0.0.1:8080 --token TOKEN [--clients 8]
//                       [--requests 400] [--code 'print(1)']
//
// Needs nothing beyond node (18+). serve_load.sh starts a server and runs this against it.
import http from 'node:http';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
const url = new URL(args.url || 'http://127.0.0.1:8080');
const token = args.token || '';
const clients = Number(args.clients || 8);
const total = Number(args.requests || 400);
const body = JSON.stringify({ code: args.code || 'print(sum(range(100)))' });

let issued = 0;
const latencies = [];
const outcomes = {};
const statuses = {};

function once(agent) {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const req = http.request({
      host: url.hostname, port: url.port, path: '/v1/execute', method: 'POST', agent,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body),
                 ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
        statuses[res.statusCode] = (statuses[res.statusCode] || 0) + 1;
        try {
          const o = JSON.parse(text).outcome ?? 'none';
          outcomes[o] = (outcomes[o] || 0) + 1;
        } catch {
          outcomes.unparsable = (outcomes.unparsable || 0) + 1;
        }
        resolve();
      });
    });
    req.on('error', (e) => { statuses[e.code || 'error'] = (statuses[e.code || 'error'] || 0) + 1; resolve(); });
    req.end(body);
  });
}

async function client() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  while (issued < total) {
    issued += 1;
    await once(agent);
  }
  agent.destroy();
}

const start = process.hrtime.bigint();
await Promise.all(Array.from({ length: clients }, client));
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
latencies.sort((a, b) => a - b);
const pct = (p) => latencies.length ? latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] : null;
const round = (v) => (v === null ? null : Math.round(v * 10) / 10);
console.log(JSON.stringify({
  clients, requests: latencies.length, seconds: round(seconds),
  requests_per_s: round(latencies.length / seconds),
  p50_ms: round(pct(50)), p90_ms: round(pct(90)), p99_ms: round(pct(99)), max_ms: round(latencies.at(-1) ?? null),
  statuses, outcomes,
}));
