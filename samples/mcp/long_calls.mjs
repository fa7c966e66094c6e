// Long execute_code calls from the official MCP TypeScript SDK (@modelcontextprotocol/sdk):
// progress notifications keep a long call alive, and an AbortSignal cancels it.
//
//   npm install @modelcontextprotocol/sdk      (once, in this folder)
//   node long_calls.mjs /usr/local/bin/codeact
//
// The SDK ends a request after `timeout` (60 s by default) whatever the server says, unless
// `resetTimeoutOnProgress` is true: then each progress notification restarts the clock. Giving
// `onprogress` makes the SDK send a progressToken, and `codeact mcp` then sends a progress
// notification every --progress-interval seconds (5 by default) while the call is queued or runs.
// Aborting the signal makes the SDK send notifications/cancelled: codeact kills the run at once,
// frees its slot, and (as the spec says) never answers the cancelled request.
//
// tests/mcp_client/client_test.mjs imports callWithProgress from this file and runs it against
// the real server (ctest mcp.typescript_sdk).

// One execute_code call that follows progress. `onProgress` gets {progress, message}; `signal`
// cancels; `timeoutMs` is the longest silence allowed, not the longest call (`maxTotalTimeoutMs`
// caps the whole call, if given).
export async function callWithProgress(client, code,
                                       { onProgress, signal, timeoutMs = 60000, maxTotalTimeoutMs } = {}) {
  return client.callTool({ name: 'execute_code', arguments: { code } }, undefined, {
    onprogress: onProgress ?? (() => {}),
    resetTimeoutOnProgress: true,
    timeout: timeoutMs,
    maxTotalTimeout: maxTotalTimeoutMs,
    signal,
  });
}

async function main() {
  const binary = process.argv[2] || 'codeact';
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const transport = new StdioClientTransport({
    command: binary,
    args: ['mcp', '--progress-interval', '1'],
  });
  const client = new Client({ name: 'codeact-long-calls-sample', version: '1.0.0' });
  await client.connect(transport);

  // 8 s of work with a 3 s timeout: it completes because progress arrives every second.
  const result = await callWithProgress(client, 'import time\ntime.sleep(8)\nprint("done")', {
    timeoutMs: 3000,
    onProgress: (p) => console.log(`progress ${p.progress}: ${p.message}`),
  });
  console.log('result:', result.structuredContent.stdout.trim());

  // A call cancelled after 2 s: the promise rejects with an AbortError; the server kills the run.
  const controller = new AbortController();
  const cancelled = callWithProgress(client, 'import time\ntime.sleep(30)', { signal: controller.signal });
  setTimeout(() => controller.abort('the user pressed stop'), 2000);
  try {
    await cancelled;
  } catch (e) {
    console.log('cancelled:', String(e));
  }
  await client.close();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
