// McpServer: the Model Context Protocol server of `codeact mcp`. JSON-RPC 2.0 over stdio, one
// UTF-8 JSON object per line. It offers exactly one tool, `execute_code`; host tools are
// reachable only from inside the executed code.
//
// What it does, and where it is lenient on purpose:
// - Lifecycle: `initialize` negotiates a handshake revision (2025-11-25, 2025-06-18, 2025-03-26,
//   2024-11-05; an unknown request gets the newest), `notifications/initialized`, `ping`.
//   Requests sent before `initialize` are served rather than refused: the spec only says
//   clients SHOULD NOT. A request whose `_meta` names 2026-07-28 is served statelessly
//   whatever was negotiated: `server/discover`, results with `resultType`, no `ping`
//   (mcp_revisions.hpp has the rules and their errors).
// - Ids come back exactly as they were sent, byte for byte (an integer beyond 64 bits too): the
//   reply copies the id's text from the request instead of re-encoding a parsed number.
// - `tools/list` -> [execute_code] with its outputSchema; `tools/call` -> `structuredContent`
//   holding the ExecutionResult JSON (docs/result.md), `isError = !success`, and
//   as content the same JSON as text (trimmed with a summary past `max_text_content_bytes`)
//   followed by each captured file: an image (by its bytes) as an image block, any other as a
//   resource_link to a file kept in `files` for the `caller` (mcp_server/mcp_result.hpp). An
//   unknown tool name is a -32602 error; missing or wrong arguments are a tool result (the
//   provider's argument error, isError true), so the model can read and fix it.
// - Resources: the files kept for `caller` (mcp_file_store.hpp): `resources/list`,
//   `resources/read` (an unknown, expired or another caller's URI is -32002 "Resource not found",
//   -32602 under 2026-07-28), `resources/templates/list` (none). Prompts: one,
//   `codeact_instructions`, the instructions (what `codeact describe` gives the model), through
//   `prompts/list` and `prompts/get`.
// - Sessions under 2026-07-28 (no Mcp-Session-Id): a stateless tools/call runs through
//   `execute_stateless` when set, which makes execute_code's "session" a signed handle
//   (provider/session_handles.hpp); else through `execute`.
// - Batches (a JSON array of messages) exist only in protocol 2025-03-26, which requires them:
//   after that version was negotiated a batch is answered with one array of the responses (none
//   for notifications, `initialize` refused inside), written once every call in it has ended.
//   Under any other version, or before `initialize`, a batch is -32600.
// - Errors: -32700 malformed JSON (id null), -32600 not an object / no "jsonrpc":"2.0" / bad id /
//   a batch where batches do not exist / a line over `max_line_bytes`, -32601 unknown method,
//   -32602 bad params. Notifications never get a response; responses from the client are
//   ignored (the server sends no requests). Blank lines are skipped.
// - At most `max_concurrent_calls` `tools/call`s run at once; more queue (up to
//   `max_queued_calls`, then the reading waits). A call read while a slot is free runs on the
//   thread that read it, which first hands the reading to another thread (so no second thread's
//   wake-up stands between the request and its run, and cancellations are still read while it
//   runs; common/leader_followers.hpp). Responses are written whole, one line each,
//   under one lock. `notifications/cancelled` (with the request's id) cancels that call: its run
//   is killed and, as the spec says, the server does not answer it (the log says it ran and
//   was cancelled).
// - Progress: a tools/call whose params carry `_meta.progressToken` gets a
//   `notifications/progress` every `progress_interval` while it is queued or running (progress
//   1, 2, 3, ... and a message saying how long), never after its response. Clients whose request
//   timeout should follow progress must say so: the TypeScript SDK extends its timeout on
//   progress only with `resetTimeoutOnProgress: true` (samples/mcp/README.md).
// - Streamed output: a tools/call with a progressToken also gets each chunk of its run's output
//   (codeact/output_stream.hpp) as a `notifications/progress` whose `message` is the chunk (the
//   same progress count goes on), all before its response.
// - Logging (2026-07-28 removed setLevel: there a call's own _meta logLevel decides which of its
//   output chunks are log messages): the server declares `logging`, and
//   `logging/setLevel` sets the lowest level the client hears (`{}`; an unknown level is -32602).
//   Once a level is set, each chunk of a run's output is also a `notifications/message` (logger
//   "stdout" at info, "stderr" at warning), and over stdio the server's and the library's own
//   log lines at or above the level are too. Before any setLevel the server sends none: the
//   client has not said it reads them. Over HTTP, notifications travel only on a tools/call's
//   SSE response, so only a call's output goes there.
// - On end of input the server waits for the calls in flight, then returns.
// - Shutdown (Serve on a file descriptor with `stop_fd`, which ServeStdio's caller makes readable
//   on SIGTERM/SIGINT): no new message is read; calls in flight (and queued) get
//   `shutdown_grace` to finish, then are cancelled (their runs end with outcome `cancelled`) and
//   answered; a second stop request cancels at once. Serve then returns.
//
// Internal (codeact::internal); the library's public API does not include it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "codeact/cancellation.hpp"
#include "codeact/execution.hpp"

namespace codeact::internal {

class McpFileStore;

struct McpServerOptions {
  std::string server_name = "codeact";
  std::string server_version;  // empty: the build's version
  std::string instructions;    // sent in the initialize result
  // The MCP definition of execute_code ({"name","description","inputSchema"}), asked per
  // tools/list so the description follows the provider's current snapshot.
  std::function<std::string()> tool_definition;
  // Runs execute_code with the call's `arguments` serialised as JSON ("{}" when absent); `cancel`
  // is the call's token (shutdown, notifications/cancelled); `on_output`, when set, is to get the
  // run's output as it comes (InvokeOptions::on_output). Called from pool threads, concurrently;
  // it must not throw (if it does, the call gets -32603).
  std::function<ExecutionResult(const std::string& arguments_json, const CancellationToken& cancel,
                                const OutputCallback& on_output)>
      execute;
  // The same for a request of the stateless revision (2026-07-28); empty: `execute`.
  std::function<ExecutionResult(const std::string& arguments_json, const CancellationToken& cancel,
                                const OutputCallback& on_output)>
      execute_stateless;
  // Where captured files other than images are kept for resources/read, and whose they are (the
  // HTTP caller; stdio has one). No store: they travel as embedded resources instead.
  std::shared_ptr<McpFileStore> files;
  std::string caller = "stdio";

  std::size_t max_line_bytes = 4u << 20;  // a longer request line is answered -32600 and skipped
  int max_concurrent_calls = 4;           // tools/call runs at once
  std::size_t max_queued_calls = 64;      // waiting calls before the reader stops reading
  bool log_to_stderr = true;              // one line per call and per protocol error
  // After a stop request, how long calls in flight may still take before they are cancelled.
  std::chrono::milliseconds shutdown_grace{10'000};
  // The text content's size past which it is trimmed (structuredContent stays whole).
  std::size_t max_text_content_bytes = 16 * 1024;
  // The raw bytes of one result's image blocks together; past it an image is linked instead.
  std::size_t max_image_content_bytes = 2u << 20;
  // How often a call that asked for progress (a progressToken) hears from the server; 0: never.
  std::chrono::milliseconds progress_interval{5'000};
};

// Writes one response line (without its newline). Must write the whole line or nothing.
using McpLineWriter = std::function<void(std::string_view line)>;

class McpServer {
 public:
  explicit McpServer(McpServerOptions options);
  ~McpServer();
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  // Handles one message synchronously (a tools/call runs inline). Returns the response line
  // without its newline, or nothing for a notification, a client response or a blank line.
  // Never throws.
  std::optional<std::string> HandleLine(std::string_view line);

  // The same for a transport other than stdio (the HTTP server's /mcp): one message or batch
  // whose tools/call runs end as `cancelled` once `cancel` is (the client went away, the server
  // is shutting down). Thread-safe: messages of one server may be handled concurrently.
  // `notify`, when given, receives the notifications of a tools/call that asked for progress (a
  // progressToken): one whole JSON-RPC message per call, from another thread, never after the
  // call's response is returned.
  std::optional<std::string> HandleMessage(
      std::string_view message, const CancellationToken& cancel,
      const std::function<void(const std::string&)>& notify = nullptr);

  // Reads messages from `in` until end of input; answers through `write` (called from several
  // threads, one call per whole line, serialised by the server). Returns once every call in
  // flight has been answered. Lines over max_line_bytes are discarded while being read.
  void Serve(std::istream& in, const McpLineWriter& write);

  // The same on a file descriptor, which also watches `stop_fd` (-1: none): once it is readable
  // the server shuts down as described above. The bytes on `stop_fd` are consumed. Returns true
  // when it ended by a stop request, false at end of input.
  bool Serve(int in_fd, const McpLineWriter& write, int stop_fd);

  const McpServerOptions& options() const { return options_; }

 private:
  struct Impl;
  McpServerOptions options_;
  std::unique_ptr<Impl> impl_;
};

// Serves on the process's stdin/stdout. stdout carries JSON-RPC only: fd 1 is moved to a
// private descriptor and fd 1 then points at stderr, so a stray write by a library cannot
// corrupt the protocol. `stop_fd` as for Serve. Returns the exit code (0 after end of input
// and after a shutdown).
int ServeStdio(McpServerOptions options, int stop_fd = -1);

}  // namespace codeact::internal
