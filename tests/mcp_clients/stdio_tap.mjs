// A transparent stand-in for `codeact mcp` that records the conversation: a client under test
// starts this script as its stdio server, and it starts the real server with the same pipes in
// between, writing each message either way to WIRE as one JSON line ({"dir":"in"|"out","msg"})
// and the server's stderr to STDERR. The matrix reads both files to learn which revision the
// client negotiated, whether it sent notifications/cancelled, and what the server logged.
//
//   node stdio_tap.mjs WIRE STDERR -- /path/to/codeact mcp ARGS...
//
// End of the client's input closes the server's; SIGTERM and SIGINT are passed on; the tap exits
// with the server's status, so a client sees the server's own exit.
import { spawn } from 'node:child_process';
import { appendFileSync, createWriteStream } from 'node:fs';

const [wirePath, stderrPath, dashes, command, ...args] = process.argv.slice(2);
if (!wirePath || !stderrPath || dashes !== '--' || !command) {
  process.stderr.write('usage: stdio_tap.mjs WIRE STDERR -- COMMAND ARGS...\n');
  process.exit(2);
}
const stderrFile = createWriteStream(stderrPath, { flags: 'a' });
const server = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
server.stderr.pipe(stderrFile);

// Each direction is split into lines only to record them; the bytes pass through unchanged.
function recordLines(dir) {
  let pending = '';
  return (chunk) => {
    pending += chunk.toString('utf8');
    let end;
    while ((end = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 1);
      if (line.trim() === '') continue;
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        msg = { unparsed: line };
      }
      appendFileSync(wirePath, `${JSON.stringify({ dir, msg })}\n`);
    }
  };
}
const recordIn = recordLines('in');
const recordOut = recordLines('out');
// Recorded before it is passed on: a reader that sees the line knows the server is sent it.
process.stdin.on('data', (chunk) => {
  recordIn(chunk);
  server.stdin.write(chunk);
});
process.stdin.on('end', () => server.stdin.end());
server.stdin.on('error', () => {});  // the server may exit first; its status says why
server.stdout.on('data', (chunk) => {
  recordOut(chunk);
  process.stdout.write(chunk);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.kill(signal));
}
server.on('exit', (code, signal) => {
  stderrFile.end(() => process.exit(code ?? (signal ? 128 : 1)));
});
