// RunToolCall, McpCallRunner and McpInlineCalls (mcp_tool_calls.hpp).
#include "mcp_server/mcp_tool_calls.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "codeact_build_config.hpp"
#include "common/leader_followers.hpp"
#include "json/result_json.hpp"
#include "json/serialize.hpp"
#include "mcp_server/mcp_file_store.hpp"
#include "mcp_server/mcp_line_source.hpp"
#include "mcp_server/mcp_notifications.hpp"
#include "mcp_server/mcp_result.hpp"
#include "mcp_server/mcp_revisions.hpp"

namespace codeact::internal {
namespace json = boost::json;
using jsonrpc::ErrorLine;
using jsonrpc::kInternalErrorCode;
using jsonrpc::ResultLine;

namespace {

using Clock = std::chrono::steady_clock;

// A stopping server checks this often whether its calls have ended.
constexpr std::chrono::milliseconds kDrainPoll{50};

// Which log notifications a call's output makes: a handshake-era call's follow the level its
// session set (logging/setLevel, which may change while it runs); a 2026-07-28 call's, the
// logLevel of its own _meta (that revision has no setLevel).
struct CallLogFilter {
  const McpLogging& session;
  bool stateless = false;
  std::optional<McpLogLevel> call_level;
  bool Wants(McpLogLevel level) const {
    if (!stateless) return session.Wants(level);
    return call_level && static_cast<int>(level) >= static_cast<int>(*call_level);
  }
};

// tools/call requests in flight, by id, so that notifications/cancelled and shutdown reach them.
class Flights {
 public:
  struct Flight {
    CancellationSource source;
    bool client_cancelled = false;  // the client withdrew it: no answer (MCP spec)
    // The request's params._meta.progressToken as JSON text; none: no progress is sent.
    std::optional<std::string> progress_token;
    int progress_sent = 0;
    Clock::time_point received = Clock::now();
  };

  std::shared_ptr<Flight> Add(const std::string& key, std::optional<std::string> progress_token) {
    auto flight = std::make_shared<Flight>();
    flight->progress_token = std::move(progress_token);
    std::lock_guard lock(mu_);
    by_key_.emplace(key, flight);
    return flight;
  }

  // Forgets the call; true when it is still to be answered.
  bool Remove(const std::string& key, const std::shared_ptr<Flight>& flight) {
    std::lock_guard lock(mu_);
    auto [first, last] = by_key_.equal_range(key);
    for (auto it = first; it != last; ++it) {
      if (it->second == flight) {
        by_key_.erase(it);
        break;
      }
    }
    return !flight->client_cancelled;
  }

  int CancelByClient(const std::string& key, const std::string& reason) {
    std::lock_guard lock(mu_);
    int n = 0;
    auto [first, last] = by_key_.equal_range(key);
    for (auto it = first; it != last; ++it, ++n) {
      it->second->client_cancelled = true;
      it->second->source.Cancel(reason);
    }
    return n;
  }

  // One notifications/progress per call that asked for them and is still to be answered. Sent
  // under the lock that Remove takes, so no notification follows the call's response.
  void SendProgress(const std::function<void(const std::string&)>& emit) {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    for (auto& [key, flight] : by_key_) {
      if (!flight->progress_token || flight->client_cancelled) continue;
      const auto seconds =
          std::chrono::duration_cast<std::chrono::seconds>(now - flight->received).count();
      ++flight->progress_sent;
      std::string line =
          R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)";
      line += *flight->progress_token;
      line += R"(,"progress":)" + std::to_string(flight->progress_sent);
      line +=
          R"(,"message":"execute_code still running after )" + std::to_string(seconds) + R"( s"}})";
      emit(line);
    }
  }

  // One chunk of a call's output: a notifications/progress with the chunk as its message (when
  // it asked for progress) and a notifications/message (when the client set a level that takes
  // it; never for a 2026-07-28 call). Under the same lock as SendProgress: the count goes on.
  void SendOutput(const std::shared_ptr<Flight>& flight, const OutputChunk& chunk,
                  const McpEmit& emit, const CallLogFilter& logs) {
    std::lock_guard lock(mu_);
    if (flight->client_cancelled) return;
    if (flight->progress_token) {
      emit(ProgressNotification(*flight->progress_token, ++flight->progress_sent, chunk.data));
    }
    const McpLogLevel level = OutputLogLevel(chunk.stream);
    if (logs.Wants(level)) {
      emit(LogNotification(level, OutputStreamKindName(chunk.stream), chunk.data));
    }
  }

  int CancelAll(const std::string& reason) {
    std::lock_guard lock(mu_);
    int n = 0;
    for (auto& [key, flight] : by_key_) n += flight->source.Cancel(reason) ? 1 : 0;
    return n;
  }

 private:
  std::mutex mu_;
  std::multimap<std::string, std::shared_ptr<Flight>> by_key_;
};

// The responses of one batch, written as one array once the last of its calls has ended.
class BatchReply {
 public:
  BatchReply(std::size_t size, std::function<void(const std::string&)> emit)
      : slots_(size), emit_(std::move(emit)) {}

  void Expect() {
    std::lock_guard lock(mu_);
    ++pending_;
  }
  // Fills slot `i` (nothing: a notification, or a call the client cancelled) and writes the
  // array when it was the last one outstanding.
  void Done(std::size_t i, std::optional<std::string> response) {
    {
      std::lock_guard lock(mu_);
      slots_[i] = std::move(response);
    }
    Release();
  }
  // Drops one hold: the dispatcher's own once every message of the batch is handed out.
  void Release() {
    std::string out;
    {
      std::lock_guard lock(mu_);
      if (--pending_ > 0) return;
      for (const auto& slot : slots_) {
        if (!slot) continue;
        out += out.empty() ? "[" : ",";
        out += *slot;
      }
    }
    if (!out.empty()) emit_(out + "]");  // all notifications: no response at all
  }

 private:
  std::mutex mu_;
  std::vector<std::optional<std::string>> slots_;
  int pending_ = 1;  // the dispatcher's own hold, released by its last Done
  std::function<void(const std::string&)> emit_;
};

// Wakes every `interval` to send the progress notifications of the calls in flight, until it is
// destroyed.
class ProgressTicker {
 public:
  ProgressTicker(std::chrono::milliseconds interval, std::function<void()> tick) {
    if (interval.count() <= 0) return;
    thread_ = std::thread([this, interval, tick = std::move(tick)] {
      std::unique_lock lock(mu_);
      while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
        lock.unlock();
        tick();
        lock.lock();
      }
    });
  }
  ~ProgressTicker() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  ProgressTicker(const ProgressTicker&) = delete;
  ProgressTicker& operator=(const ProgressTicker&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// The run's output as notifications of `flight` (Flights::SendOutput); none when the call asked
// for no progress and the client hears no log messages.
OutputCallback OutputNotifier(Flights& flights, const std::shared_ptr<Flights::Flight>& flight,
                              const McpEmit& emit, const CallLogFilter& logs) {
  if (!emit || (!flight->progress_token && !logs.Wants(McpLogLevel::kWarning))) return nullptr;
  return [&flights, flight, &emit, logs](const OutputChunk& chunk) {
    flights.SendOutput(flight, chunk, emit, logs);
  };
}

}  // namespace

std::string RunToolCall(const McpServerOptions& options, spdlog::logger& logger,
                        std::string_view id, const std::string& arguments_json,
                        const CancellationToken& cancel, std::string& log_line, bool stateless,
                        const OutputCallback& on_output) {
  if (!options.execute)
    return ErrorLine(id, kInternalErrorCode, "Internal error: no executor configured");
  ExecutionResult result;
  try {
    result = stateless && options.execute_stateless
                 ? options.execute_stateless(arguments_json, cancel, on_output)
                 : options.execute(arguments_json, cancel, on_output);
  } catch (const std::exception& e) {
    logger.error("call {}: execute threw: {}", id, e.what());
    return ErrorLine(id, kInternalErrorCode, std::string("Internal error: ") + e.what());
  } catch (...) {
    logger.error("call {}: execute threw", id);
    return ErrorLine(id, kInternalErrorCode, "Internal error");
  }
  json::object structured = internal::ResultToJsonObject(result);
  const std::string result_json = internal::SerializeJson(structured);
  log_line = fmt::format("call {}: outcome={} exit_code={} tool_calls={} duration_ms={}", id,
                         OutcomeName(result.outcome), result.exit_code, result.tool_calls,
                         result.duration_ms);
  McpContentOptions content_options;
  content_options.max_text_bytes = options.max_text_content_bytes;
  content_options.max_image_bytes = options.max_image_content_bytes;
  if (options.files) {
    content_options.keep = [&options](const CapturedFile& f) {
      return options.files->Keep(options.caller, f.path, f.media_type, f.data,
                                 McpFileStore::Clock::now());
    };
  }
  json::array content = McpResultContent(result, result_json, content_options);
  json::object reply{{"content", std::move(content)},
                     {"structuredContent", std::move(structured)},
                     {"isError", !result.success()}};
  if (stateless) {
    MarkStatelessResult(
        reply, {options.server_name,
                options.server_version.empty() ? std::string(kVersion) : options.server_version,
                options.instructions});
  }
  return ResultLine(id, reply);
}

// Declared in the order they must stop in reverse: the loop joins every call first, then the
// ticker stops, and the calls' records go last.
struct McpCallRunner::State {
  State(const McpServerOptions& options, const McpEmit& emit_to, const McpLogging& log_levels)
      : emit(emit_to),
        logging(log_levels),
        ticker(options.progress_interval, [this] { flights.SendProgress(emit); }),
        loop(options.max_concurrent_calls, options.max_queued_calls) {}

  const McpEmit& emit;
  const McpLogging& logging;
  Flights flights;
  ProgressTicker ticker;
  LeaderFollowers loop;
};

McpCallRunner::McpCallRunner(const McpServerOptions& options,
                             std::shared_ptr<spdlog::logger> logger, const McpEmit& emit,
                             const McpLogging& logging)
    : options_(options),
      logger_(std::move(logger)),
      state_(std::make_unique<State>(options, emit, logging)) {}

McpCallRunner::~McpCallRunner() = default;

void McpCallRunner::ReadUntilEnd(const std::function<bool()>& read_line) {
  state_->loop.ReadUntilEnd(read_line);
}

void McpCallRunner::Handle(McpProtocol::Parsed& parsed) {
  LeaderFollowers& loop = state_->loop;
  Flights& flights = state_->flights;
  const McpEmit& emit = state_->emit;
  std::shared_ptr<BatchReply> batch;
  if (parsed.batch) batch = std::make_shared<BatchReply>(parsed.items.size(), emit);
  for (std::size_t i = 0; i < parsed.items.size(); ++i) {
    McpProtocol::Dispatch& d = parsed.items[i];
    if (d.cancel_key) {
      const int n = flights.CancelByClient(*d.cancel_key, d.cancel_reason);
      logger_->info("notifications/cancelled: {} call(s) cancelled", n);
    }
    if (d.is_call) {
      auto flight = flights.Add(d.id_key, std::move(d.progress_token));
      if (batch) batch->Expect();
      loop.Post([this, &emit, &flights, flight, batch, i, key = std::move(d.id_key),
                 id = std::move(d.id), args = std::move(d.arguments_json), stateless = d.stateless,
                 log_level = d.log_level] {
        std::string response;
        std::string log_line;
        try {
          response = RunToolCall(
              options_, *logger_, id, args, flight->source.token(), log_line, stateless,
              OutputNotifier(flights, flight, emit, {state_->logging, stateless, log_level}));
        } catch (const std::exception& e) {
          response = ErrorLine(id, kInternalErrorCode, std::string("Internal error: ") + e.what());
        }
        const bool answer = flights.Remove(key, flight);
        if (!answer) logger_->info("call {} was cancelled by the client: not answered", id);
        if (batch) {
          batch->Done(i, answer ? std::optional<std::string>(std::move(response)) : std::nullopt);
        } else if (answer) {
          emit(response);
        }
        if (!log_line.empty()) logger_->info("{}", log_line);
      });
    } else if (batch) {
      batch->Expect();
      batch->Done(i, std::move(d.response));
    } else if (d.response) {
      emit(*d.response);
    }
  }
  if (batch) batch->Release();
}

bool McpCallRunner::Drain(int stop_fd, int stop_requests) {
  LeaderFollowers& loop = state_->loop;
  Flights& flights = state_->flights;
  bool stopped = stop_requests > 0;
  if (stop_fd < 0) return stopped;  // the loop's destructor waits for every call
  std::optional<Clock::time_point> cancel_at;
  if (stop_requests == 1) cancel_at = Clock::now() + options_.shutdown_grace;
  if (stop_requests > 1) {
    cancel_at = Clock::now();
    logger_->info("second stop request: cancelling the calls in flight now");
  }
  while (!loop.Idle()) {
    auto wait = kDrainPoll;
    if (cancel_at) {
      wait = std::clamp(std::chrono::ceil<std::chrono::milliseconds>(*cancel_at - Clock::now()),
                        std::chrono::milliseconds(0), kDrainPoll);
    }
    pollfd p{stop_fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) > 0 && (p.revents & POLLIN)) {
      const int requests = DrainFd(stop_fd);
      stopped = true;
      if (!cancel_at && requests == 1) {
        cancel_at = Clock::now() + options_.shutdown_grace;
        logger_->info("stop requested: calls in flight have {} ms to finish",
                      options_.shutdown_grace.count());
      } else {
        cancel_at = Clock::now();
        logger_->info("second stop request: cancelling the calls in flight now");
      }
    }
    if (cancel_at && Clock::now() >= *cancel_at) {
      const int n = flights.CancelAll("the server is shutting down");
      logger_->info("shutdown: {} call(s) cancelled; answering them", n);
      break;
    }
  }
  return stopped;
}

struct McpInlineCalls::State {
  explicit State(const McpLogging& log_levels) : logging(log_levels) {}
  const McpLogging& logging;
  Flights flights;
};

McpInlineCalls::McpInlineCalls(const McpServerOptions& options,
                               std::shared_ptr<spdlog::logger> logger, const McpLogging& logging)
    : options_(options), logger_(std::move(logger)), state_(std::make_unique<State>(logging)) {}

McpInlineCalls::~McpInlineCalls() = default;

void McpInlineCalls::Cancel(const std::string& key, const std::string& reason) {
  const int n = state_->flights.CancelByClient(key, reason);
  logger_->info("notifications/cancelled: {} call(s) cancelled", n);
}

std::string McpInlineCalls::Run(McpProtocol::Dispatch& d, const CancellationToken& cancel,
                                const McpEmit& notify) {
  // Cancelled by `cancel` (the transport) or by the client's notifications/cancelled.
  auto flight = state_->flights.Add(d.id_key, std::nullopt);
  CancellationRegistration link =
      cancel.OnCancel([flight, cancel] { flight->source.Cancel(cancel.reason()); });
  // Progress as over stdio, to `notify` (an SSE response stream on HTTP).
  Flights progress;
  std::shared_ptr<Flights::Flight> progress_flight;
  std::optional<ProgressTicker> ticker;
  OutputCallback on_output;
  if (notify) {
    progress_flight = progress.Add(d.id_key, d.progress_token);
    if (d.progress_token) {
      ticker.emplace(options_.progress_interval, [&] { progress.SendProgress(notify); });
    }
    on_output = OutputNotifier(progress, progress_flight, notify,
                               {state_->logging, d.stateless, d.log_level});
  }
  std::string log_line;
  std::string response;
  try {
    response = RunToolCall(options_, *logger_, d.id, d.arguments_json, flight->source.token(),
                           log_line, d.stateless, on_output);
  } catch (...) {
    if (progress_flight) progress.Remove(d.id_key, progress_flight);
    ticker.reset();
    state_->flights.Remove(d.id_key, flight);
    throw;
  }
  if (progress_flight) progress.Remove(d.id_key, progress_flight);  // none after this
  ticker.reset();
  link = CancellationRegistration();
  state_->flights.Remove(d.id_key, flight);
  if (!log_line.empty()) logger_->info("{}", log_line);
  return response;
}

}  // namespace codeact::internal
