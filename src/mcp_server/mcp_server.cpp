// McpServer (mcp_server.hpp): the JSON-RPC codec and dispatch, the call pool and the stdio loop.
// Boost.JSON and spdlog stay inside src/server.
#include "mcp_server/mcp_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/json.hpp>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "codeact/provider.hpp"
#include "codeact_build_config.hpp"
#include "common/task_thread.hpp"
#include "common/utf8.hpp"
#include "json/raw_json.hpp"
#include "json/result_json.hpp"
#include "json/serialize.hpp"
#include "mcp_server/log_setup.hpp"
#include "mcp_server/mcp_result.hpp"
#include "os/pipe_io.hpp"

namespace codeact::internal {
namespace json = boost::json;
namespace {

// Newest first: an unknown requested version is answered with the first.
constexpr std::array<std::string_view, 3> kProtocolVersions = {"2025-06-18", "2025-03-26",
                                                               "2024-11-05"};

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalErrorCode = -32603;

// The one protocol version with JSON-RPC batches: it requires them; 2025-06-18 removed them.
constexpr std::string_view kBatchVersion = "2025-03-26";
// The reply id when the request's own cannot be used.
constexpr std::string_view kNullId = "null";
// A stopping server checks this often whether its calls have ended.
constexpr std::chrono::milliseconds kDrainPoll{50};

using Clock = std::chrono::steady_clock;

// Replies are assembled as text so that the id goes back exactly as it came (`id` is JSON text).
std::string ErrorLine(std::string_view id, int code, std::string_view message) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out.append(id);
  out += R"(,"error":)";
  AppendJson(out, json::object{{"code", code}, {"message", message}});
  out += '}';
  return out;
}

std::string ResultLine(std::string_view id, const json::value& result) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out.append(id);
  out += R"(,"result":)";
  AppendJson(out, result);
  out += '}';
  return out;
}

std::string ParseErrorText(const json::error_code& ec) {
  if (ec == json::error::too_deep) return "Parse error: the message is " + JsonErrorText(ec);
  return "Parse error: " + ec.message();
}

// What identifies a request for notifications/cancelled: its id's value (a string's text, a
// number's digits as sent).
std::string IdKey(const json::value& id, std::string_view raw) {
  if (id.is_string()) return "s" + std::string(id.as_string());
  return "n" + std::string(raw);
}

std::shared_ptr<spdlog::logger> MakeLogger(bool enabled) {
  return MakeStderrLogger("codeact mcp", enabled);  // text or JSON lines, as --log-format says
}

// Where request lines come from: a stream (tests, HandleLine's callers) or a descriptor that is
// polled together with a stop descriptor.
class LineSource {
 public:
  enum class Next { kLine, kEnd, kStop };
  virtual ~LineSource() = default;
  // After kStop: how many stop requests had arrived (two or more: cancel at once).
  int stop_requests() const { return stop_requests_; }
  // One line of at most the cap, without its newline; `oversized` when it was longer (then
  // `line` is empty: the rest was read and dropped). A last line without a newline counts.
  virtual Next Read(std::string& line, bool& oversized) = 0;

 protected:
  int stop_requests_ = 0;
};

// Reads one line of at most `cap` bytes without ever holding more than `cap` bytes of it: the
// rest of a longer line is read and dropped. Returns false at end of input with nothing read.
bool ReadCappedLine(std::istream& in, std::size_t cap, std::string& line, bool& oversized) {
  line.clear();
  oversized = false;
  bool any = false;
  std::array<char, 64 * 1024> buf;
  for (;;) {
    in.get(buf.data(), static_cast<std::streamsize>(buf.size()), '\n');
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n > 0) {
      any = true;
      if (!oversized) {
        if (line.size() + n > cap) {
          oversized = true;
          std::string().swap(line);
        } else {
          line.append(buf.data(), n);
        }
      }
    }
    if (in.bad()) return any;
    if (in.fail() && !in.eof()) in.clear();  // get() extracted nothing: the next char is '\n'
    if (in.eof()) return any;
    const auto next = in.peek();
    if (next == std::istream::traits_type::eof()) return any;
    if (next == '\n') {
      in.ignore();
      return true;
    }
    // The buffer filled before the line ended: keep reading the same line.
  }
}

class StreamSource final : public LineSource {
 public:
  StreamSource(std::istream& in, std::size_t cap) : in_(in), cap_(cap) {}
  Next Read(std::string& line, bool& oversized) override {
    return ReadCappedLine(in_, cap_, line, oversized) ? Next::kLine : Next::kEnd;
  }

 private:
  std::istream& in_;
  const std::size_t cap_;
};

// Consumes whatever is readable on a non-blocking or polled descriptor; returns how many bytes
// (each stop request is one byte).
int DrainFd(int fd) {
  char buf[256];
  int total = 0;
  pollfd p{fd, POLLIN, 0};
  ssize_t n = 0;
  while (::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) && (n = ::read(fd, buf, sizeof buf)) > 0)
    total += static_cast<int>(n);
  return total;
}

class FdSource final : public LineSource {
 public:
  FdSource(int fd, int stop_fd, std::size_t cap) : fd_(fd), stop_fd_(stop_fd), cap_(cap) {}

  Next Read(std::string& line, bool& oversized) override {
    for (;;) {
      while (start_ < buf_.size()) {
        const std::size_t nl = buf_.find('\n', start_);
        const std::size_t end = nl == std::string::npos ? buf_.size() : nl;
        if (end > start_) partial_ = true;
        if (!oversized_) {
          if (line_.size() + (end - start_) > cap_) {
            oversized_ = true;
            std::string().swap(line_);
          } else {
            line_.append(buf_, start_, end - start_);
          }
        }
        start_ = end;
        if (nl != std::string::npos) {
          start_ = nl + 1;
          return Deliver(line, oversized);
        }
      }
      buf_.clear();
      start_ = 0;
      if (eof_) {
        if (partial_) return Deliver(line, oversized);
        return Next::kEnd;
      }
      pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {fd_, POLLIN, 0}};
      const int first = stop_fd_ >= 0 ? 0 : 1;
      if (::poll(fds + first, static_cast<nfds_t>(2 - first), -1) < 0) {
        if (errno == EINTR) continue;
        eof_ = true;
        continue;
      }
      // A stop request wins over input that arrived at the same time.
      if (stop_fd_ >= 0 && (fds[0].revents & POLLIN)) {
        stop_requests_ = std::max(DrainFd(stop_fd_), 1);
        return Next::kStop;
      }
      if (fds[1].revents == 0) continue;
      char chunk[64 * 1024];
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n > 0) {
        buf_.assign(chunk, static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        eof_ = true;
      }
    }
  }

 private:
  Next Deliver(std::string& line, bool& oversized) {
    line = std::move(line_);
    line_.clear();
    oversized = std::exchange(oversized_, false);
    partial_ = false;
    return Next::kLine;
  }

  const int fd_;
  const int stop_fd_;
  const std::size_t cap_;
  std::string buf_;
  std::size_t start_ = 0;
  std::string line_;
  bool oversized_ = false;
  bool partial_ = false;
  bool eof_ = false;
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

}  // namespace

struct McpServer::Impl {
  // What one message asks for: an answer now, nothing, a tools/call to run, or a cancellation.
  struct Dispatch {
    std::optional<std::string> response;
    bool is_call = false;
    std::string id = std::string(kNullId);  // the request's id, as sent
    std::string id_key;                     // IdKey of it, for notifications/cancelled
    std::string arguments_json;
    std::optional<std::string> progress_token;  // params._meta.progressToken, as JSON text
    std::optional<std::string> cancel_key;      // notifications/cancelled: the request it names
    std::string cancel_reason;
  };
  // A line: one message, a batch of them, or a reply to the line as a whole.
  struct Parsed {
    bool batch = false;
    std::vector<Dispatch> items;
    std::optional<std::string> response;
  };

  explicit Impl(const McpServerOptions& o) : options(o), logger(MakeLogger(o.log_to_stderr)) {}

  std::string OversizedLine() const {
    logger->warn("request line over {} bytes discarded", options.max_line_bytes);
    return ErrorLine(kNullId, kInvalidRequest,
                     "Invalid Request: the message is longer than the server's limit of " +
                         std::to_string(options.max_line_bytes) + " bytes; it was discarded");
  }

  Parsed ParseLine(std::string_view line) {
    Parsed parsed;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return parsed;  // blank: skipped
    if (line.size() > options.max_line_bytes) {
      parsed.response = OversizedLine();
      return parsed;
    }

    json::error_code ec;
    const json::value msg = ParseJson(line, ec);
    if (ec) {
      logger->warn("parse error: {}", ec.message());
      parsed.response = ErrorLine(kNullId, kParseError, ParseErrorText(ec));
      return parsed;
    }
    if (!msg.is_array()) {
      parsed.items.push_back(DispatchMessage(msg, line, /*in_batch=*/false));
      return parsed;
    }
    const std::string version = Negotiated();
    if (version != kBatchVersion) {
      parsed.response =
          ErrorLine(kNullId, kInvalidRequest,
                    "Invalid Request: batch arrays exist only in MCP protocol version " +
                        std::string(kBatchVersion) +
                        (version.empty() ? std::string(", and no version was negotiated yet")
                                         : ", not in the negotiated " + version));
      return parsed;
    }
    const json::array& elements = msg.as_array();
    if (elements.empty()) {
      parsed.response = ErrorLine(kNullId, kInvalidRequest, "Invalid Request: an empty batch");
      return parsed;
    }
    const std::vector<std::string_view> raw = RawArrayElements(line);
    if (raw.size() != elements.size()) {  // cannot happen for valid JSON; never echo a wrong id
      parsed.response =
          ErrorLine(kNullId, kInternalErrorCode, "Internal error: cannot split the batch");
      return parsed;
    }
    parsed.batch = true;
    for (std::size_t i = 0; i < elements.size(); ++i) {
      parsed.items.push_back(DispatchMessage(elements[i], raw[i], /*in_batch=*/true));
    }
    return parsed;
  }

  // One message; `raw` is its text, from which the id is copied.
  Dispatch DispatchMessage(const json::value& msg, std::string_view raw, bool in_batch) {
    Dispatch d;
    if (!msg.is_object()) {
      d.response =
          ErrorLine(kNullId, kInvalidRequest, "Invalid Request: a message must be a JSON object");
      return d;
    }
    const json::object& o = msg.as_object();
    const json::value* id = o.if_contains("id");
    // A number that overflowed to infinity is no id anyone can mean.
    const bool id_ok = id == nullptr || id->is_string() || id->is_int64() || id->is_uint64() ||
                       (id->is_double() && std::isfinite(id->as_double()));
    std::string_view id_text = kNullId;
    if (id_ok && id != nullptr) {
      if (auto found = RawMember(raw, "id")) id_text = *found;
    }
    const std::string reply_id(id_text);
    const json::value* version = o.if_contains("jsonrpc");
    if (version == nullptr || !version->is_string() || version->as_string() != "2.0") {
      d.response =
          ErrorLine(reply_id, kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
      return d;
    }
    if (!id_ok) {
      d.response = ErrorLine(kNullId, kInvalidRequest,
                             "Invalid Request: \"id\" must be a string or a number");
      return d;
    }
    const json::value* method = o.if_contains("method");
    if (method == nullptr) {
      // A response to a request of ours; the server sends none, so there is nothing to match.
      if (id != nullptr && (o.contains("result") || o.contains("error"))) return d;
      d.response = ErrorLine(reply_id, kInvalidRequest, "Invalid Request: \"method\" is missing");
      return d;
    }
    if (!method->is_string()) {
      d.response =
          ErrorLine(reply_id, kInvalidRequest, "Invalid Request: \"method\" must be a string");
      return d;
    }
    const json::value* params = o.if_contains("params");
    if (params != nullptr && !params->is_object() && !params->is_array()) {
      d.response =
          ErrorLine(reply_id, kInvalidRequest, "Invalid Request: \"params\" must be an object");
      return d;
    }
    const std::string_view name = method->as_string();
    if (id == nullptr) {  // a notification: never answered
      if (name == "notifications/initialized") {
        logger->info("client initialized");
      } else if (name == "notifications/cancelled") {
        NoteCancellation(params, raw, d);
      }
      return d;
    }
    if (params != nullptr && !params->is_object()) {
      d.response =
          ErrorLine(reply_id, kInvalidParams, "Invalid params: \"params\" must be an object");
      return d;
    }
    const json::object empty;
    DispatchRequest(name, params != nullptr ? params->as_object() : empty, *id, id_text, in_batch,
                    d);
    return d;
  }

  // A request with a valid envelope, by its method: the answer in `d.response`, or for a
  // tools/call of execute_code what the call needs.
  void DispatchRequest(std::string_view name, const json::object& p, const json::value& id,
                       std::string_view id_text, bool in_batch, Dispatch& d) {
    const std::string reply_id(id_text);
    if (name == "initialize") {
      d.response = in_batch ? ErrorLine(reply_id, kInvalidRequest,
                                        "Invalid Request: initialize must not be part of a batch")
                            : Initialize(reply_id, p);
    } else if (name == "ping") {
      d.response = ResultLine(reply_id, json::object{});
    } else if (name == "tools/list") {
      d.response = ToolsList(reply_id);
    } else if (name == "tools/call") {
      const json::value* tool = p.if_contains("name");
      if (tool == nullptr || !tool->is_string()) {
        d.response = ErrorLine(reply_id, kInvalidParams,
                               "Invalid params: tools/call needs \"name\" (a string)");
      } else if (tool->as_string() != ExecuteCodeFunction::kName) {
        d.response = ErrorLine(reply_id, kInvalidParams,
                               "Unknown tool: " + std::string(tool->as_string()) +
                                   " (this server has only " + ExecuteCodeFunction::kName + ")");
      } else {
        d.is_call = true;
        d.id = reply_id;
        d.id_key = IdKey(id, id_text);
        const json::value* args = p.if_contains("arguments");
        // Wrong arguments are the tool's business: the provider answers with an argument error
        // the model can read, so they are passed through as they came.
        d.arguments_json = args != nullptr ? SerializeJson(*args) : "{}";
        d.progress_token = ProgressToken(p);
      }
    } else {
      d.response = ErrorLine(reply_id, kMethodNotFound, "Method not found: " + std::string(name));
    }
  }

  // params._meta.progressToken (a string or an integer, MCP "Progress"); anything else is
  // ignored, as is a token of another type.
  static std::optional<std::string> ProgressToken(const json::object& p) {
    const json::value* meta = p.if_contains("_meta");
    if (meta == nullptr || !meta->is_object()) return std::nullopt;
    const json::value* token = meta->as_object().if_contains("progressToken");
    if (token == nullptr || !(token->is_string() || token->is_int64() || token->is_uint64()))
      return std::nullopt;
    return SerializeJson(*token);
  }

  // notifications/cancelled {"requestId": ..., "reason": "..."}: which request, and why.
  void NoteCancellation(const json::value* params, std::string_view raw, Dispatch& d) {
    const json::value* request = params != nullptr && params->is_object()
                                     ? params->as_object().if_contains("requestId")
                                     : nullptr;
    if (request == nullptr || !(request->is_string() || request->is_number())) {
      logger->warn("notifications/cancelled without a usable requestId ignored");
      return;
    }
    std::string_view request_text;
    if (auto params_text = RawMember(raw, "params")) {
      if (auto found = RawMember(*params_text, "requestId")) request_text = *found;
    }
    d.cancel_key = IdKey(*request, request_text);
    const json::value* reason = params->as_object().if_contains("reason");
    d.cancel_reason = "the client cancelled the request";
    if (reason != nullptr && reason->is_string() && !reason->as_string().empty()) {
      d.cancel_reason += ": " + SanitizeUtf8(std::string(reason->as_string()));
    }
  }

  std::string Negotiated() {
    std::lock_guard lock(version_mu);
    return negotiated;
  }

  std::string Initialize(std::string_view id, const json::object& p) {
    const json::value* requested = p.if_contains("protocolVersion");
    if (requested == nullptr || !requested->is_string()) {
      return ErrorLine(id, kInvalidParams,
                       "Invalid params: initialize needs \"protocolVersion\" (a string)");
    }
    std::string_view answer = kProtocolVersions.front();
    for (std::string_view v : kProtocolVersions) {
      if (requested->as_string() == v) answer = v;
    }
    logger->info("initialize: client asked for protocol {}, answering {}",
                 std::string_view(requested->as_string()), answer);
    {
      std::lock_guard lock(version_mu);
      negotiated = std::string(answer);
    }
    const std::string version = options.server_version.empty() ? kVersion : options.server_version;
    return ResultLine(
        id, json::object{
                {"protocolVersion", answer},
                {"capabilities", json::object{{"tools", json::object{{"listChanged", false}}}}},
                {"serverInfo", json::object{{"name", options.server_name}, {"version", version}}},
                {"instructions", options.instructions}});
  }

  std::string ToolsList(std::string_view id) {
    if (!options.tool_definition)
      return ErrorLine(id, kInternalErrorCode, "Internal error: no tool definition");
    std::string definition;
    try {
      definition = options.tool_definition();
    } catch (const std::exception& e) {
      return ErrorLine(id, kInternalErrorCode, std::string("Internal error: ") + e.what());
    }
    json::error_code ec;
    json::value tool = json::parse(definition, ec);
    if (ec || !tool.is_object())
      return ErrorLine(id, kInternalErrorCode, "Internal error: bad tool definition");
    return ResultLine(id, json::object{{"tools", json::array{std::move(tool)}}});
  }

  // The response line of one call. Its log line goes to `log_line`, for the caller to write once
  // the response is out: with stderr read by the client, a line written first woke the client
  // for it before the answer it waits for.
  std::string RunCall(std::string_view id, const std::string& arguments_json,
                      const CancellationToken& cancel, std::string& log_line) {
    if (!options.execute)
      return ErrorLine(id, kInternalErrorCode, "Internal error: no executor configured");
    ExecutionResult result;
    try {
      result = options.execute(arguments_json, cancel);
    } catch (const std::exception& e) {
      logger->error("call {}: execute threw: {}", id, e.what());
      return ErrorLine(id, kInternalErrorCode, std::string("Internal error: ") + e.what());
    } catch (...) {
      logger->error("call {}: execute threw", id);
      return ErrorLine(id, kInternalErrorCode, "Internal error");
    }
    json::object structured = internal::ResultToJsonObject(result);
    const std::string result_json = internal::SerializeJson(structured);
    log_line = fmt::format("call {}: outcome={} exit_code={} tool_calls={} duration_ms={}", id,
                           OutcomeName(result.outcome), result.exit_code, result.tool_calls,
                           result.duration_ms);
    json::array content = McpResultContent(result, result_json, options.max_text_content_bytes);
    return ResultLine(id, json::object{{"content", std::move(content)},
                                       {"structuredContent", std::move(structured)},
                                       {"isError", !result.success()}});
  }

  // The read loop shared by both Serve overloads. Returns true when a stop request ended it.
  bool ServeLoop(LineSource& source, const McpLineWriter& write, int stop_fd) {
    std::mutex write_mu;
    const std::function<void(const std::string&)> emit = [&](const std::string& response) {
      std::lock_guard lock(write_mu);
      try {
        write(response);
      } catch (const std::exception& e) {
        logger->error("cannot write a response: {}", e.what());
      }
    };
    Flights flights;
    bool stopped = false;
    {
      // Post blocks while the queue is full, so a client that floods calls is slowed down.
      // Declared before the pool, so it stops only after the pool has joined every call.
      ProgressTicker ticker(options.progress_interval, [&] { flights.SendProgress(emit); });
      TaskThread pool(options.max_concurrent_calls,
                      std::max<std::size_t>(options.max_queued_calls, 1));
      std::string line;
      bool oversized = false;
      for (;;) {
        const LineSource::Next next = source.Read(line, oversized);
        if (next == LineSource::Next::kEnd) {
          logger->info("end of input; waiting for the calls in flight");
          break;
        }
        if (next == LineSource::Next::kStop) {
          stopped = true;
          logger->info(
              "stop requested: reading no more requests; calls in flight have {} ms to finish",
              options.shutdown_grace.count());
          break;
        }
        if (oversized) {
          emit(OversizedLine());
          continue;
        }
        Parsed parsed;
        try {
          parsed = ParseLine(line);
        } catch (const std::exception& e) {
          logger->error("internal error: {}", e.what());
          parsed.response =
              ErrorLine(kNullId, kInternalErrorCode, std::string("Internal error: ") + e.what());
        }
        if (parsed.response) {
          emit(*parsed.response);
          continue;
        }
        Handle(parsed, pool, flights, emit);
      }
      stopped = DrainCalls(pool, flights, stop_fd, stopped ? source.stop_requests() : 0);
    }  // the pool runs what is still queued and joins here, before `emit` goes out of scope
    return stopped;
  }

  void Handle(Parsed& parsed, TaskThread& pool, Flights& flights,
              const std::function<void(const std::string&)>& emit) {
    std::shared_ptr<BatchReply> batch;
    if (parsed.batch) batch = std::make_shared<BatchReply>(parsed.items.size(), emit);
    for (std::size_t i = 0; i < parsed.items.size(); ++i) {
      Dispatch& d = parsed.items[i];
      if (d.cancel_key) {
        const int n = flights.CancelByClient(*d.cancel_key, d.cancel_reason);
        logger->info("notifications/cancelled: {} call(s) cancelled", n);
      }
      if (d.is_call) {
        auto flight = flights.Add(d.id_key, std::move(d.progress_token));
        if (batch) batch->Expect();
        pool.Post([this, &emit, &flights, flight, batch, i, key = std::move(d.id_key),
                   id = std::move(d.id), args = std::move(d.arguments_json)] {
          std::string response;
          std::string log_line;
          try {
            response = RunCall(id, args, flight->source.token(), log_line);
          } catch (const std::exception& e) {
            response =
                ErrorLine(id, kInternalErrorCode, std::string("Internal error: ") + e.what());
          }
          const bool answer = flights.Remove(key, flight);
          if (!answer) logger->info("call {} was cancelled by the client: not answered", id);
          if (batch) {
            batch->Done(i, answer ? std::optional<std::string>(std::move(response)) : std::nullopt);
          } else if (answer) {
            emit(response);
          }
          if (!log_line.empty()) logger->info("{}", log_line);
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

  // After the read loop: waits for the calls in flight. Once a stop was requested (before:
  // `stop_requests`, or now through `stop_fd`) they get `shutdown_grace`, then are cancelled; a
  // second stop request cancels them at once. Returns whether a stop was requested.
  bool DrainCalls(TaskThread& pool, Flights& flights, int stop_fd, int stop_requests) {
    bool stopped = stop_requests > 0;
    if (stop_fd < 0) return stopped;  // the pool's destructor waits for every call
    std::optional<Clock::time_point> cancel_at;
    if (stop_requests == 1) cancel_at = Clock::now() + options.shutdown_grace;
    if (stop_requests > 1) {
      cancel_at = Clock::now();
      logger->info("second stop request: cancelling the calls in flight now");
    }
    while (!pool.Idle()) {
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
          cancel_at = Clock::now() + options.shutdown_grace;
          logger->info("stop requested: calls in flight have {} ms to finish",
                       options.shutdown_grace.count());
        } else {
          cancel_at = Clock::now();
          logger->info("second stop request: cancelling the calls in flight now");
        }
      }
      if (cancel_at && Clock::now() >= *cancel_at) {
        const int n = flights.CancelAll("the server is shutting down");
        logger->info("shutdown: {} call(s) cancelled; answering them", n);
        break;
      }
    }
    return stopped;
  }

  const McpServerOptions& options;
  std::shared_ptr<spdlog::logger> logger;
  std::mutex version_mu;
  std::string negotiated;  // the protocol version of the last initialize; empty before
};

McpServer::McpServer(McpServerOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>(options_)) {}

McpServer::~McpServer() = default;

std::optional<std::string> McpServer::HandleLine(std::string_view line) {
  return HandleMessage(line, CancellationToken());
}

std::optional<std::string> McpServer::HandleMessage(std::string_view line,
                                                    const CancellationToken& cancel) {
  try {
    Impl::Parsed parsed = impl_->ParseLine(line);
    if (parsed.response) return std::move(parsed.response);
    std::string batch;
    std::optional<std::string> single;
    for (auto& d : parsed.items) {
      std::optional<std::string> response = std::move(d.response);
      if (d.is_call) {
        std::string log_line;
        response = impl_->RunCall(d.id, d.arguments_json, cancel, log_line);
        if (!log_line.empty()) impl_->logger->info("{}", log_line);
      }
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
