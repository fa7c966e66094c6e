// codeact mcp [provider flags]: the stdio MCP server (src/mcp_server/mcp_server.hpp).
#include <charconv>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/process_setup.hpp"
#include "cli/provider_flags.hpp"
#include "mcp_server/execute_code_wiring.hpp"
#include "mcp_server/log_setup.hpp"
#include "mcp_server/mcp_file_store.hpp"
#include "mcp_server/mcp_server.hpp"
#include "provider/client_sessions.hpp"

namespace codeact::cli {
namespace {

constexpr const char* kMcpProse =
    R"(Serves the Model Context Protocol over stdio (JSON-RPC 2.0, one message per line) with one
tool, execute_code. Host tools from --tools are reachable only from inside the code, through
`await call_tool("name", ...)`. stdout carries the protocol only; logs go to stderr.

Approval: a run needs approval when its code names a tool with "requires_approval": true (or
names tools dynamically, which counts as naming them all); it then runs only if --approve was
given, and without it the call returns a result with outcome "approval_required" (isError true)
and nothing runs. Runs that name no such tool run, and a call of a gated tool in them fails with
ToolError "ApprovalRequired". MCP has no per-call approval channel here, so the decision is made
when the server starts.

Progress and cancellation: a tools/call with params._meta.progressToken gets a
notifications/progress every --progress-interval seconds while it runs; notifications/cancelled
kills its run at once and the request is not answered (the MCP specification).

Shutdown: on SIGTERM or SIGINT the server reads no more requests, lets the calls in flight
finish for up to --shutdown-grace seconds, then cancels them (their results say outcome
"cancelled") and answers them, removes its scratch directories and exits 0. A second signal
cancels at once. End of input waits for the calls in flight without a limit.

Sessions: execute_code takes an optional "session" name; calls with the same name run in one
persistent interpreter (variables, imports and files kept). Names belong to this connection; its
sessions close when the server ends, or after --session-idle-expiry seconds without use.
)";

bool PositiveInt(const std::string& text, long long& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && out > 0;
}

bool NonNegativeSeconds(const std::string& text, double& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && out >= 0 && out <= 86'400;
}

using Options = internal::McpServerOptions;

// A number of seconds from 0 to 86400, into a duration of `options`.
Flag<Options> SecondsRow(std::string flag, std::string default_text, std::string help,
                         std::chrono::milliseconds Options::*member) {
  return {{flag, "S", std::move(default_text), std::move(help)},
          [flag, member](const std::string& text, Options& options) {
            double seconds = 0;
            if (!NonNegativeSeconds(text, seconds)) {
              return InvalidArgument(flag + " needs a number of seconds from 0 to 86400, got \"" +
                                     text + "\"");
            }
            options.*member = std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
            return Status::Ok();
          }};
}

std::string Seconds(std::chrono::milliseconds ms) {
  return NumberText(static_cast<double>(ms.count()) / 1000.0);
}

const FlagTable<Options>& McpFlagTable() {
  static const FlagTable<Options> table = [] {
    const Options defaults;
    FlagTable<Options> t;
    t.push_back({{"--max-line-bytes", "N", std::to_string(defaults.max_line_bytes),
                  "longest request line accepted; longer -> error -32600"},
                 [](const std::string& text, Options& options) {
                   long long number = 0;
                   if (!PositiveInt(text, number)) {
                     return InvalidArgument("--max-line-bytes needs a positive integer, got \"" +
                                            text + "\"");
                   }
                   options.max_line_bytes = static_cast<std::size_t>(number);
                   return Status::Ok();
                 }});
    t.push_back({{"--max-concurrent", "N", std::to_string(defaults.max_concurrent_calls),
                  "tools/call runs at once; more calls wait their turn"},
                 [](const std::string& text, Options& options) {
                   long long number = 0;
                   if (!PositiveInt(text, number) || number > 1024) {
                     return InvalidArgument(
                         "--max-concurrent needs an integer from 1 to 1024, got \"" + text + "\"");
                   }
                   options.max_concurrent_calls = static_cast<int>(number);
                   return Status::Ok();
                 }});
    t.push_back(SecondsRow("--shutdown-grace", Seconds(defaults.shutdown_grace),
                           "seconds calls in flight may take after SIGTERM/SIGINT (0 cancels at "
                           "once)",
                           &Options::shutdown_grace));
    t.push_back(SecondsRow("--progress-interval", Seconds(defaults.progress_interval),
                           "seconds between the progress notifications of a call that sent a "
                           "progressToken (0 sends none)",
                           &Options::progress_interval));
    t.push_back(
        {{"--quiet", "", "", "no log lines on stderr"}, [](const std::string&, Options& options) {
           options.log_to_stderr = false;
           return Status::Ok();
         }});
    return t;
  }();
  return table;
}

}  // namespace

std::vector<FlagDoc> McpFlagDocs() { return DocsOf(McpFlagTable()); }

int CmdMcp(const std::vector<std::string>& argv) {
  internal::McpServerOptions options;
  auto started = StartCommand("mcp", kMcpProse, argv, McpFlagTable(), options);
  const Args* args = std::get_if<Args>(&started);
  if (args == nullptr) return std::get<int>(started);
  // Before the start-up, so that a signal during it (which can take a while: the pool warms) is
  // not lost: the server sees it as soon as it serves.
  const int stop_fd = InstallShutdownSignals();
  if (!options.log_to_stderr) {
    // Quiet means the library's lines too (the environment notes the executor logs once).
    internal::LogSettings settings = internal::CurrentLogSettings();
    settings.level = std::nullopt;
    internal::ApplyLogSettings(settings);
  }

  auto provider = BuildProvider(*args);
  if (!provider.ok()) {
    std::cerr << "codeact mcp: " << provider.status().message() << "\n";
    return kExitUsage;
  }
  (*provider)->Warm();  // the first tools/call finds a ready interpreter too
  // One stdio server serves one connection: its session names are this connection's, and its
  // sessions close when the server ends.
  auto sessions = std::make_shared<internal::ClientSessions>(*provider);
  InvokeOptions invoke;
  if (args->Has("--approve")) invoke.approved = true;
  // stdio has one caller: the files its calls captured, and its 2026-07-28 session handles.
  options.files = std::make_shared<internal::McpFileStore>();
  options.caller = "stdio";
  internal::HandleSessions handles{std::make_shared<internal::SessionHandleSigner>(),
                                   options.caller, sessions};
  internal::WireExecuteCode(options, **provider, std::move(sessions), std::move(invoke), nullptr,
                            std::move(handles));
  return internal::ServeStdio(std::move(options), stop_fd);
}

}  // namespace codeact::cli
