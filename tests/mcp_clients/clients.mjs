// One adapter per real MCP client library under test, all with the same small surface, so the
// matrix (matrix.mjs) asks each the same questions through that library's own MCP layer:
//
//   connect({ transport: 'stdio', command, args } | { transport: 'http', url }) -> connection
//   connection.toolNames()                       tools/list, the names
//   connection.run(code, { signal, onProgress }) tools/call execute_code -> the result JSON
//   connection.close()
//
// `offers` says what the library lets a caller do: cancel a call (an AbortSignal) and hear its
// progress (an onprogress callback). A cell the library does not offer is not tested.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// Read from the folder, not through the package's exports map (some do not export package.json).
const versionOf = (pkg) =>
  JSON.parse(readFileSync(join(here, 'node_modules', pkg, 'package.json'), 'utf8')).version;

// The execute_code result JSON, from structuredContent or (as the specification recommends the
// server also sends it) from the first text content.
export function resultJson(callToolResult) {
  if (callToolResult?.structuredContent) return callToolResult.structuredContent;
  const text = callToolResult?.content?.find?.((c) => c.type === 'text')?.text;
  if (typeof text !== 'string') throw new Error(`no result JSON in ${JSON.stringify(callToolResult)}`);
  return JSON.parse(text);
}

// The official TypeScript SDK, v1 (what most hosts embed today).
const tsSdkV1 = {
  name: 'TypeScript SDK v1',
  packages: ['@modelcontextprotocol/sdk'],
  offers: { cancel: true, progress: true },
  async connect(target) {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client({ name: 'codeact-matrix-sdk-v1', version: '1.0.0' });
    let transport;
    if (target.transport === 'stdio') {
      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      transport = new StdioClientTransport({ command: target.command, args: target.args });
    } else {
      const { StreamableHTTPClientTransport } =
        await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      transport = new StreamableHTTPClientTransport(new URL(target.url));
    }
    await client.connect(transport);
    return {
      async toolNames() {
        return (await client.listTools()).tools.map((t) => t.name);
      },
      async run(code, { signal, onProgress } = {}) {
        const result = await client.callTool({ name: 'execute_code', arguments: { code } }, undefined, {
          signal,
          ...(onProgress ? { onprogress: onProgress, resetTimeoutOnProgress: true } : {}),
        });
        return resultJson(result);
      },
      close: () => client.close(),
    };
  },
};

// The official TypeScript SDK, v2 (@modelcontextprotocol/client), with version negotiation
// "auto": it probes with server/discover (2026-07-28) and falls back to initialize.
const tsSdkV2 = {
  name: 'TypeScript SDK v2',
  packages: ['@modelcontextprotocol/client'],
  offers: { cancel: true, progress: true },
  async connect(target) {
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const client = new Client({ name: 'codeact-matrix-sdk-v2', version: '1.0.0' },
                              { versionNegotiation: { mode: 'auto' } });
    let transport;
    if (target.transport === 'stdio') {
      const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
      transport = new StdioClientTransport({ command: target.command, args: target.args });
    } else {
      transport = new StreamableHTTPClientTransport(new URL(target.url));
    }
    await client.connect(transport);
    return {
      async toolNames() {
        return (await client.listTools()).tools.map((t) => t.name);
      },
      async run(code, { signal, onProgress } = {}) {
        const result = await client.callTool({ name: 'execute_code', arguments: { code } }, {
          signal,
          ...(onProgress ? { onprogress: onProgress, resetTimeoutOnProgress: true } : {}),
        });
        return resultJson(result);
      },
      close: () => client.close(),
    };
  },
};

// LangChain's MCP adapters: the tools as LangChain StructuredTools (invoke with a RunnableConfig
// whose signal cancels), progress through the client's onProgress hook.
const langchain = {
  name: 'LangChain MCP adapters',
  packages: ['@langchain/mcp-adapters', '@langchain/core'],
  offers: { cancel: true, progress: true },
  async connect(target) {
    const { MultiServerMCPClient } = await import('@langchain/mcp-adapters');
    let progressSink = null;
    const server = target.transport === 'stdio'
      ? { transport: 'stdio', command: target.command, args: target.args, restart: { enabled: false } }
      : { transport: 'http', url: target.url, automaticSSEFallback: false };
    const client = new MultiServerMCPClient({
      mcpServers: { codeact: server },
      throwOnLoadError: true,
      onProgress: (progress) => progressSink?.(progress),
    });
    const tools = await client.getTools();
    const tool = tools.find((t) => t.name === 'execute_code');
    return {
      async toolNames() {
        return tools.map((t) => t.name);
      },
      async run(code, { signal, onProgress } = {}) {
        progressSink = onProgress ?? null;
        try {
          const content = await tool.invoke({ code }, { signal });
          // A string, a list of content blocks, or (one block) the block itself.
          const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : [content].flat();
          return resultJson({ content: blocks });
        } finally {
          progressSink = null;
        }
      },
      close: () => client.close(),
    };
  },
};

// The OpenAI Agents SDK: its MCP servers (MCPServerStdio, MCPServerStreamableHttp) turned into the
// agent's function tools by getAllMcpTools, each invoked as a run invokes it for a model's tool
// call (no model needed); the invocation's signal cancels. errorFunction null: a failed call
// rejects instead of becoming text for the model.
const openaiAgents = {
  name: 'OpenAI Agents SDK',
  packages: ['@openai/agents', '@openai/agents-core'],
  offers: { cancel: true, progress: false },
  async connect(target) {
    const { MCPServerStdio, MCPServerStreamableHttp, RunContext, getAllMcpTools } =
      await import('@openai/agents');
    const server = target.transport === 'stdio'
      ? new MCPServerStdio({ name: 'codeact', command: target.command, args: target.args })
      : new MCPServerStreamableHttp({ name: 'codeact', url: target.url });
    await server.connect();
    const runContext = new RunContext({});
    let tools;
    try {
      tools = await getAllMcpTools({ mcpServers: [server], runContext, errorFunction: null });
    } catch (e) {
      await server.close();
      throw e;
    }
    return {
      async toolNames() {
        return tools.map((t) => t.name);
      },
      async run(code, { signal } = {}) {
        const input = JSON.stringify({ code });
        const tool = tools.find((t) => t.name === 'execute_code');
        const output = await tool.invoke(runContext, input, {
          toolCall: { type: 'function_call', callId: 'call-1', name: 'execute_code', arguments: input },
          signal,
        });
        // What the model would read: the text content (one part), or its JSON as a string.
        if (typeof output === 'string') return JSON.parse(output);
        return resultJson({ content: [output].flat() });
      },
      close: () => server.close(),
    };
  },
};

// The AI SDK: @ai-sdk/mcp's client gives the tools as AI SDK tools, and `ai`'s generateText runs
// them as it would for a model's tool call. The model is the SDK's own mock (ai/test), which asks
// for one execute_code call; generateText's abortSignal reaches the MCP request.
const aiSdk = {
  name: 'AI SDK',
  packages: ['ai', '@ai-sdk/mcp'],
  offers: { cancel: true, progress: false },
  async connect(target) {
    const { createMCPClient } = await import('@ai-sdk/mcp');
    const { generateText, stepCountIs } = await import('ai');
    const { MockLanguageModelV4 } = await import('ai/test');
    let transport;
    if (target.transport === 'stdio') {
      const { StdioMCPTransport } = await import('@ai-sdk/mcp/mcp-stdio');
      transport = new StdioMCPTransport({ command: target.command, args: target.args });
    } else {
      transport = { type: 'http', url: target.url };
    }
    const client = await createMCPClient({ transport, name: 'codeact-matrix-ai-sdk' });
    const tools = await client.tools();
    const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
                    outputTokens: { total: 1, text: 0, reasoning: 0 } };
    return {
      async toolNames() {
        return Object.keys(tools);
      },
      async run(code, { signal } = {}) {
        const model = new MockLanguageModelV4({
          doGenerate: async () => ({
            content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'execute_code',
                        input: JSON.stringify({ code }) }],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage,
            warnings: [],
          }),
        });
        const result = await generateText({ model, tools, prompt: 'Run the code.', abortSignal: signal,
                                            stopWhen: stepCountIs(1) });
        const toolResult = result.toolResults.find((r) => r.toolName === 'execute_code');
        if (!toolResult) {
          const error = result.content.find((c) => c.type === 'tool-error');
          throw error?.error ?? new Error(`no execute_code result: ${JSON.stringify(result.content)}`);
        }
        return resultJson(toolResult.output);
      },
      close: () => client.close(),
    };
  },
};

export const clients = [tsSdkV1, tsSdkV2, langchain, openaiAgents, aiSdk];
export function clientVersion(client) {
  return client.packages.map((p) => `${p}@${versionOf(p)}`).join(' + ');
}
