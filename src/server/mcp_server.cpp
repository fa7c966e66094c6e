// McpServer (mcp_server.hpp): the JSON-RPC codec and dispatch, the call pool and the stdio loop.
// Boost.JSON and spdlog stay inside this file.
#include "server/mcp_server.hpp"

#include <fcntl.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/json.hpp>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "codeact/json.hpp"
#include "codeact/provider.hpp"
#include "codeact_build_config.hpp"
#include "common/utf8.hpp"
#include "process/child.hpp"
#include "json/serialize.hpp"

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

// Deep enough for any real request; Boost's default of 32 would reject odd but valid arguments.
constexpr std::size_t kMaxJsonDepth = 128;

std::string ErrorLine(const json::value& id, int code, std::string_view message) {
  return SerializeJson(
      json::object{{"jsonrpc", "2.0"},
                   {"id", id},
                   {"error", json::object{{"code", code}, {"message", message}}}});
}

std::string ResultLine(const json::value& id, json::value result) {
  return SerializeJson(
      json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

// The text block the model reads: stdout first (what the code printed is what the model asked
// to see), then labelled sections for stderr, the output value, what went wrong and the files.
std::string ResultText(const ExecutionResult& r) {
  std::string text;
  auto section = [&text](std::string_view title) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += "--- ";
    text += title;
    text += " ---\n";
  };
  text += r.stdout_text;
  if (r.stdout_truncated) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += "[stdout truncated at the output cap]\n";
  }
  if (!r.stderr_text.empty() || r.stderr_truncated) {
    section("stderr");
    text += r.stderr_text;
    if (r.stderr_truncated) {
      if (!text.empty() && text.back() != '\n') text += '\n';
      text += "[stderr truncated at the output cap]\n";
    }
  }
  if (r.output_present) {
    section("output");
    text += r.output_json;
  }
  const std::string outcome(OutcomeName(r.outcome));
  if (r.outcome == Outcome::kValidationFailed) {
    section("validation failed: nothing ran");
    if (r.violations.empty() && !r.message.empty()) text += r.message + "\n";
    for (const auto& v : r.violations) {
      text += "line " + std::to_string(v.line) + ", col " + std::to_string(v.col) + " [" + v.rule +
              "]: " + v.message;
      if (!v.hint.empty()) text += " (hint: " + v.hint + ")";
      text += '\n';
    }
  } else if (r.error.has_value()) {
    section("error (outcome " + outcome + ", exit code " + std::to_string(r.exit_code) + ")");
    text += r.error->type + ": " + r.error->message + "\n";
    if (!r.error->traceback.empty()) text += r.error->traceback;
  } else if (!r.success()) {
    section(outcome + " (exit code " + std::to_string(r.exit_code) + ")");
    text += r.message.empty() ? "the run did not succeed" : r.message;
  }
  if (!r.files.empty()) {
    section("files captured (bytes in structuredContent.files)");
    for (const auto& f : r.files)
      text += f.path + " (" + std::to_string(f.size) + " bytes, " + f.media_type + ")\n";
  }
  if (!r.omitted_files.empty()) {
    section("files omitted");
    for (const auto& f : r.omitted_files) text += f.path + ": " + f.reason + "\n";
  }
  if (text.empty()) text = "(no output)";
  while (text.size() > 1 && text.back() == '\n') text.pop_back();
  return SanitizeUtf8(text);
}

std::shared_ptr<spdlog::logger> MakeLogger(bool enabled) {
  auto logger =
      std::make_shared<spdlog::logger>("mcp", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [codeact mcp] [%l] %v");
  logger->set_level(enabled ? spdlog::level::info : spdlog::level::off);
  return logger;
}

// Runs tools/call jobs on a fixed set of threads. Submit blocks while the queue is full, so a
// client that floods calls is slowed down instead of growing memory. The destructor runs every
// job already submitted, then joins.
class CallPool {
 public:
  CallPool(int workers, std::size_t max_queued)
      : max_queued_(std::max<std::size_t>(max_queued, 1)) {
    const int n = std::max(workers, 1);
    threads_.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Work(); });
  }

  ~CallPool() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void Submit(std::function<void()> job) {
    std::unique_lock lock(mu_);
    space_cv_.wait(lock, [this] { return queue_.size() < max_queued_; });
    queue_.push_back(std::move(job));
    lock.unlock();
    work_cv_.notify_one();
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping and drained
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      space_cv_.notify_one();
      job();
    }
  }

  const std::size_t max_queued_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable space_cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
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

}  // namespace

struct McpServer::Impl {
  // What one message asks for: an answer now, nothing, or a tools/call to run.
  struct Dispatch {
    std::optional<std::string> response;
    bool is_call = false;
    json::value id;
    std::string arguments_json;
  };

  explicit Impl(const McpServerOptions& o) : options(o), logger(MakeLogger(o.log_to_stderr)) {}

  std::string OversizedLine() const {
    logger->warn("request line over {} bytes discarded", options.max_line_bytes);
    return ErrorLine(nullptr, kInvalidRequest,
                     "Invalid Request: the message is longer than the server's limit of " +
                         std::to_string(options.max_line_bytes) + " bytes; it was discarded");
  }

  Dispatch Parse(std::string_view line) {
    Dispatch d;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return d;  // blank: skipped
    if (line.size() > options.max_line_bytes) {
      d.response = OversizedLine();
      return d;
    }

    json::parse_options popts;
    popts.max_depth = kMaxJsonDepth;
    json::error_code ec;
    json::value msg;
    try {
      msg = json::parse(line, ec, {}, popts);
    } catch (const std::exception&) {  // allocation failure and the like
      ec = json::make_error_code(json::error::syntax);
    }
    if (ec) {
      logger->warn("parse error: {}", ec.message());
      d.response = ErrorLine(nullptr, kParseError, "Parse error: " + ec.message());
      return d;
    }
    if (msg.is_array()) {
      d.response = ErrorLine(nullptr, kInvalidRequest,
                             "Invalid Request: batch arrays are not supported by MCP");
      return d;
    }
    if (!msg.is_object()) {
      d.response =
          ErrorLine(nullptr, kInvalidRequest, "Invalid Request: a message must be a JSON object");
      return d;
    }
    const json::object& o = msg.as_object();
    const json::value* id = o.if_contains("id");
    // A number that overflowed to infinity could not be written back as JSON.
    const bool id_ok = id == nullptr || id->is_string() || id->is_int64() || id->is_uint64() ||
                       (id->is_double() && std::isfinite(id->as_double()));
    const json::value reply_id = id_ok && id != nullptr ? *id : json::value(nullptr);
    const json::value* version = o.if_contains("jsonrpc");
    if (version == nullptr || !version->is_string() || version->as_string() != "2.0") {
      d.response =
          ErrorLine(reply_id, kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
      return d;
    }
    if (!id_ok) {
      d.response = ErrorLine(nullptr, kInvalidRequest,
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
        logger->info("cancellation ignored: a run ends by its own limits");
      }
      return d;
    }
    if (params != nullptr && !params->is_object()) {
      d.response = ErrorLine(*id, kInvalidParams, "Invalid params: \"params\" must be an object");
      return d;
    }
    const json::object empty;
    const json::object& p = params != nullptr ? params->as_object() : empty;

    if (name == "initialize") {
      d.response = Initialize(*id, p);
    } else if (name == "ping") {
      d.response = ResultLine(*id, json::object{});
    } else if (name == "tools/list") {
      d.response = ToolsList(*id);
    } else if (name == "tools/call") {
      const json::value* tool = p.if_contains("name");
      if (tool == nullptr || !tool->is_string()) {
        d.response =
            ErrorLine(*id, kInvalidParams, "Invalid params: tools/call needs \"name\" (a string)");
      } else if (tool->as_string() != ExecuteCodeFunction::kName) {
        d.response = ErrorLine(*id, kInvalidParams,
                               "Unknown tool: " + std::string(tool->as_string()) +
                                   " (this server has only " + ExecuteCodeFunction::kName + ")");
      } else {
        d.is_call = true;
        d.id = *id;
        const json::value* args = p.if_contains("arguments");
        // Wrong arguments are the tool's business: the provider answers with an argument error
        // the model can read, so they are passed through as they came.
        d.arguments_json = args != nullptr ? json::serialize(*args) : "{}";
      }
    } else {
      d.response = ErrorLine(*id, kMethodNotFound, "Method not found: " + std::string(name));
    }
    return d;
  }

  std::string Initialize(const json::value& id, const json::object& p) {
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
    const std::string version = options.server_version.empty() ? kVersion : options.server_version;
    return ResultLine(
        id, json::object{
                {"protocolVersion", answer},
                {"capabilities", json::object{{"tools", json::object{{"listChanged", false}}}}},
                {"serverInfo", json::object{{"name", options.server_name}, {"version", version}}},
                {"instructions", options.instructions}});
  }

  std::string ToolsList(const json::value& id) {
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

  std::string RunCall(const json::value& id, const std::string& arguments_json) {
    if (!options.execute)
      return ErrorLine(id, kInternalErrorCode, "Internal error: no executor configured");
    ExecutionResult result;
    try {
      result = options.execute(arguments_json);
    } catch (const std::exception& e) {
      logger->error("call {}: execute threw: {}", json::serialize(id), e.what());
      return ErrorLine(id, kInternalErrorCode, std::string("Internal error: ") + e.what());
    } catch (...) {
      logger->error("call {}: execute threw", json::serialize(id));
      return ErrorLine(id, kInternalErrorCode, "Internal error");
    }
    json::error_code ec;
    json::value structured = json::parse(ToJson(result), ec);
    if (ec || !structured.is_object()) {
      return ErrorLine(id, kInternalErrorCode, "Internal error: the result could not be encoded");
    }
    logger->info("call {}: outcome={} exit_code={} tool_calls={} duration_ms={}",
                 json::serialize(id), OutcomeName(result.outcome), result.exit_code,
                 result.tool_calls, result.duration_ms);
    json::array content{json::object{{"type", "text"}, {"text", ResultText(result)}}};
    return ResultLine(id, json::object{{"content", std::move(content)},
                                       {"structuredContent", std::move(structured)},
                                       {"isError", !result.success()}});
  }

  const McpServerOptions& options;
  std::shared_ptr<spdlog::logger> logger;
};

McpServer::McpServer(McpServerOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>(options_)) {}

McpServer::~McpServer() = default;

std::optional<std::string> McpServer::HandleLine(std::string_view line) {
  try {
    Impl::Dispatch d = impl_->Parse(line);
    if (d.is_call) return impl_->RunCall(d.id, d.arguments_json);
    return std::move(d.response);
  } catch (const std::exception& e) {  // a broken invariant in the codec: answer, never die
    impl_->logger->error("internal error: {}", e.what());
    return ErrorLine(nullptr, kInternalErrorCode, std::string("Internal error: ") + e.what());
  }
}

void McpServer::Serve(std::istream& in, const McpLineWriter& write) {
  std::mutex write_mu;
  auto emit = [&](const std::string& response) {
    std::lock_guard lock(write_mu);
    try {
      write(response);
    } catch (const std::exception& e) {
      impl_->logger->error("cannot write a response: {}", e.what());
    }
  };
  CallPool pool(options_.max_concurrent_calls, options_.max_queued_calls);
  std::string line;
  bool oversized = false;
  while (ReadCappedLine(in, options_.max_line_bytes, line, oversized)) {
    if (oversized) {
      emit(impl_->OversizedLine());
      continue;
    }
    Impl::Dispatch d;
    try {
      d = impl_->Parse(line);
    } catch (const std::exception& e) {
      impl_->logger->error("internal error: {}", e.what());
      d.response =
          ErrorLine(nullptr, kInternalErrorCode, std::string("Internal error: ") + e.what());
    }
    if (d.is_call) {
      pool.Submit([this, &emit, id = std::move(d.id), args = std::move(d.arguments_json)] {
        std::string response;
        try {
          response = impl_->RunCall(id, args);
        } catch (const std::exception& e) {
          response = ErrorLine(id, kInternalErrorCode, std::string("Internal error: ") + e.what());
        }
        emit(response);
      });
    } else if (d.response) {
      emit(*d.response);
    }
  }
  impl_->logger->info("end of input; waiting for the calls in flight");
  // The pool's destructor runs what is queued and joins before `emit` goes out of scope.
}

int ServeStdio(McpServerOptions options) {
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
  std::ios_base::sync_with_stdio(false);  // buffered reads of stdin; nothing else reads it

  McpServer server(std::move(options));
  std::atomic<bool> output_gone{false};
  server.Serve(std::cin, [&](std::string_view line) {
    if (output_gone.load()) return;
    std::string framed;
    framed.reserve(line.size() + 1);
    framed.append(line);
    framed.push_back('\n');
    if (Status s = WriteAll(protocol_fd, framed); !s.ok()) {
      output_gone.store(true);  // the client closed its end; finish quietly
      std::fprintf(stderr, "codeact mcp: cannot write to stdout: %s\n", s.message().c_str());
    }
  });
  ::close(protocol_fd);
  return 0;
}

}  // namespace codeact::internal
