// McpServer (mcp_server.hpp): the read loop over a stream or stdio, and the synchronous
// HandleMessage of other transports. The JSON-RPC side is in mcp_jsonrpc.cpp, the tool calls in
// mcp_tool_calls.cpp, the line readers in mcp_line_source.cpp. Boost.JSON and spdlog stay inside
// src/server.
#include "mcp_server/mcp_server.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>

#include "mcp_server/log_setup.hpp"
#include "mcp_server/mcp_jsonrpc.hpp"
#include "mcp_server/mcp_line_source.hpp"
#include "mcp_server/mcp_notifications.hpp"
#include "mcp_server/mcp_tool_calls.hpp"
#include "os/pipe_io.hpp"

namespace codeact::internal {

using jsonrpc::ErrorLine;
using jsonrpc::kInternalErrorCode;
using jsonrpc::kNullId;

namespace {

// A log line forwarded as a notification must not forward the lines its own writing logs.
thread_local bool forwarding_log = false;

McpLogLevel McpLevelOf(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return McpLogLevel::kDebug;
    case LogLevel::kInfo:
      return McpLogLevel::kInfo;
    case LogLevel::kWarning:
      return McpLogLevel::kWarning;
    case LogLevel::kError:
      break;
  }
  return McpLogLevel::kError;
}

}  // namespace

struct McpServer::Impl {
  explicit Impl(const McpServerOptions& o)
      : options(o),
        logger(MakeStderrLogger(  // text or JSON lines, and MCP logging while a loop serves
            "codeact mcp", o.log_to_stderr,
            [this](LogLevel level, std::string_view message) {
              ForwardLog("codeact mcp", level, message);
            })),
        protocol(o, logger, logging),
        inline_calls(o, logger, logging) {}

  // A log line as a notifications/message, while a read loop serves and the client's level
  // takes it.
  void ForwardLog(std::string_view component, LogLevel level, std::string_view message) {
    const McpLogLevel mcp_level = McpLevelOf(level);
    if (forwarding_log || !logging.Wants(mcp_level)) return;
    std::lock_guard lock(log_emit_mu);
    if (!log_emit) return;
    forwarding_log = true;
    (*log_emit)(LogNotification(mcp_level, component, message));
    forwarding_log = false;
  }

  // The read loop shared by both Serve overloads. Returns true when a stop request ended it.
  bool ServeLoop(LineSource& source, const McpLineWriter& write, int stop_fd) {
    std::mutex write_mu;
    const std::function<void(const std::string&)> emit = [&](const std::string& response) {
      std::string failed;
      {
        std::lock_guard lock(write_mu);
        try {
          write(response);
        } catch (const std::exception& e) {
          failed = e.what();
        }
      }
      if (!failed.empty()) logger->error("cannot write a response: {}", failed);
    };
    // The server's and the library's log lines reach the client too, at its level (stdio has a
    // stream for them; HandleMessage's transports have none outside a call's response).
    SetLogEmit(&emit);
    ApplyLogSettings(CurrentLogSettings(), [this](LogLevel level, std::string_view message) {
      ForwardLog("codeact", level, message);
    });
    struct Unhook {
      Impl& impl;
      ~Unhook() {
        ApplyLogSettings(CurrentLogSettings());
        impl.SetLogEmit(nullptr);
      }
    } unhook{*this};
    bool stopped = false;
    {
      McpCallRunner calls(options, logger, emit, logging);
      std::string line;
      calls.ReadUntilEnd([&] { return ReadOne(source, line, calls, emit, stopped); });
      stopped = calls.Drain(stop_fd, stopped ? source.stop_requests() : 0);
    }  // the loop runs what is still queued and joins here, before `emit` goes out of scope
    return stopped;
  }

  // One turn of the read loop, on whichever of the loop's threads reads now: reads a line and
  // answers it, or hands its calls to `calls`. False at the end of the input or on a stop.
  bool ReadOne(LineSource& source, std::string& line, McpCallRunner& calls, const McpEmit& emit,
               bool& stopped) {
    bool oversized = false;
    const LineSource::Next next = source.Read(line, oversized);
    if (next == LineSource::Next::kEnd) {
      logger->info("end of input; waiting for the calls in flight");
      return false;
    }
    if (next == LineSource::Next::kStop) {
      stopped = true;
      logger->info("stop requested: reading no more requests; calls in flight have {} ms to finish",
                   options.shutdown_grace.count());
      return false;
    }
    if (oversized) {
      emit(protocol.OversizedLine());
      return true;
    }
    McpProtocol::Parsed parsed;
    try {
      parsed = protocol.ParseLine(line);
    } catch (const std::exception& e) {
      logger->error("internal error: {}", e.what());
      parsed.response =
          ErrorLine(kNullId, kInternalErrorCode, std::string("Internal error: ") + e.what());
    }
    if (parsed.response) {
      emit(*parsed.response);
      return true;
    }
    calls.Handle(parsed);
    return true;
  }

  void SetLogEmit(const std::function<void(const std::string&)>* emit) {
    std::lock_guard lock(log_emit_mu);
    log_emit = emit;
  }

  const McpServerOptions& options;
  McpLogging logging;  // before the logger, the protocol and the calls, which use it
  std::mutex log_emit_mu;
  const std::function<void(const std::string&)>* log_emit = nullptr;  // while ServeLoop runs
  std::shared_ptr<spdlog::logger> logger;
  McpProtocol protocol;
  // HandleMessage's calls in flight, so that a notifications/cancelled handled by another
  // HandleMessage (the next POST of the same HTTP session) reaches them.
  McpInlineCalls inline_calls;
};

McpServer::McpServer(McpServerOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>(options_)) {}

McpServer::~McpServer() = default;

std::optional<std::string> McpServer::HandleLine(std::string_view line) {
  return HandleMessage(line, CancellationToken());
}

std::optional<std::string> McpServer::HandleMessage(
    std::string_view line, const CancellationToken& cancel,
    const std::function<void(const std::string&)>& notify) {
  try {
    McpProtocol::Parsed parsed = impl_->protocol.ParseLine(line);
    if (parsed.response) return std::move(parsed.response);
    std::string batch;
    std::optional<std::string> single;
    for (auto& d : parsed.items) {
      std::optional<std::string> response = std::move(d.response);
      if (d.cancel_key) impl_->inline_calls.Cancel(*d.cancel_key, d.cancel_reason);
      if (d.is_call) response = impl_->inline_calls.Run(d, cancel, notify);
      if (!response) continue;
      if (!parsed.batch) return response;
      batch += batch.empty() ? "[" : ",";
      batch += *response;
    }
    if (batch.empty()) return std::nullopt;
    return batch + "]";
  } catch (const std::exception& e) {  // a broken invariant in the codec: answer, never die
    impl_->logger->error("internal error: {}", e.what());
    return ErrorLine(kNullId, kInternalErrorCode, std::string("Internal error: ") + e.what());
  }
}

void McpServer::Serve(std::istream& in, const McpLineWriter& write) {
  StreamSource source(in, options_.max_line_bytes);
  impl_->ServeLoop(source, write, /*stop_fd=*/-1);
}

bool McpServer::Serve(int in_fd, const McpLineWriter& write, int stop_fd) {
  FdSource source(in_fd, stop_fd, options_.max_line_bytes);
  return impl_->ServeLoop(source, write, stop_fd);
}

int ServeStdio(McpServerOptions options, int stop_fd) {
  std::fflush(stdout);
  // Keep the protocol on a private descriptor and point fd 1 at stderr: whatever else writes
  // to stdout (a library, the embedded interpreter) lands in the log, not in the protocol.
  const int protocol_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (protocol_fd < 0) {
    std::fprintf(stderr, "codeact mcp: cannot duplicate stdout\n");
    return 1;
  }
  if (::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::fprintf(stderr, "codeact mcp: cannot redirect stdout to stderr; continuing\n");
  }

  McpServer server(std::move(options));
  std::atomic<bool> output_gone{false};
  server.Serve(
      STDIN_FILENO,
      [&](std::string_view line) {
        if (output_gone.load()) return;
        std::string framed;
        framed.reserve(line.size() + 1);
        framed.append(line);
        framed.push_back('\n');
        if (Status s = WriteAll(protocol_fd, framed); !s.ok()) {
          output_gone.store(true);  // the client closed its end; finish quietly
          std::fprintf(stderr, "codeact mcp: cannot write to stdout: %s\n", s.message().c_str());
        }
      },
      stop_fd);
  ::close(protocol_fd);
  return 0;
}

}  // namespace codeact::internal
