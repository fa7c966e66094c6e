#include "http_server/http_service.hpp"

#include <poll.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <boost/json.hpp>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <variant>

#include "codeact/json.hpp"
#include "common/ascii.hpp"
#include "common/sha256.hpp"
#include "http_server/caller_quotas.hpp"
#include "http_server/caller_sessions.hpp"
#include "http_server/host_header.hpp"
#include "http_server/mcp_sessions.hpp"
#include "http_server/rest_sessions.hpp"
#include "http_server/serve_metrics.hpp"
#include "http_server/work_pool.hpp"
#include "json/serialize.hpp"
#include "limits/limit_table.hpp"
#include "mcp_server/log_setup.hpp"
#include "mcp_server/mcp_server.hpp"
#include "provider/client_sessions.hpp"

namespace codeact::internal {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace json = boost::json;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxHeaderBytes = 16 * 1024;
constexpr const char* kJson = "application/json";

// ---- Replies ---------------------------------------------------------------------------------

struct Reply {
  http::status status = http::status::ok;
  std::string body;
  std::string content_type = kJson;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string outcome;  // for the access log: a run's outcome, or why it was refused
};

Reply JsonReply(http::status status, const json::object& body, std::string outcome = "") {
  Reply r;
  r.status = status;
  r.body = SerializeJson(body);
  r.outcome = std::move(outcome);
  return r;
}

// {"error": message, "code": short reason}; `reason` is also the metrics label and log outcome.
Reply ErrorReply(http::status status, std::string_view reason, const std::string& message) {
  Reply r = JsonReply(status, json::object{{"error", message}, {"code", reason}}, "");
  r.outcome = std::string(reason);
  return r;
}

std::string RandomHex(std::size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  std::size_t got = 0;
  while (got < raw.size()) {
    const ssize_t n = ::getrandom(raw.data() + got, raw.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The kernel's generator failing is a broken host; never hand out a predictable id.
      std::fprintf(stderr, "codeact serve: getrandom failed\n");
      std::abort();
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

// The media type of a Content-Type value, lower-cased, parameters dropped.
std::string MediaType(std::string_view value) {
  const std::size_t semi = value.find(';');
  std::string_view type = value.substr(0, semi);
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  while (!type.empty() && type.front() == ' ') type.remove_prefix(1);
  return AsciiLower(type);
}

// ---- MCP sessions (Streamable HTTP) ----------------------------------------------------------

struct McpHttpSession {
  std::string owner;
  std::shared_ptr<ClientSessions> sessions;  // execute_code's named sessions of this client
  std::shared_ptr<McpServer> server;
};

McpSessionTable::Limits McpLimits(const HttpServiceOptions& o) {
  McpSessionTable::Limits l;
  l.max_sessions = o.max_mcp_sessions;
  l.per_caller = o.mcp_sessions_per_caller > 0 ? o.mcp_sessions_per_caller
                                               : std::max<std::size_t>(1, o.max_mcp_sessions / 4);
  l.idle = o.mcp_session_idle;
  return l;
}

// The outcome of the run a worker thread is handling, for its access line (an MCP tools/call
// reports it through the execute callback, which runs inline on that thread).
thread_local std::string* current_outcome = nullptr;

std::int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string IsoTime() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return text;
}

// A run guard, seccomp or Landlock ended: the guard's PermissionError says "codeact guard:",
// a seccomp kill is SIGSYS, and a refusal Landlock or seccomp made fail with EPERM/EACCES that the
// code did not catch names the rule in its message.
std::optional<std::string> SecurityDenial(const ExecutionResult& r) {
  if (r.error && r.error->message.find("codeact guard:") != std::string::npos) {
    return "runtime guard: " + r.error->message.substr(0, 300);
  }
  if (r.exit_code == 128 + SIGSYS || r.message.find("SIGSYS") != std::string::npos ||
      r.message.find("seccomp") != std::string::npos) {
    return "seccomp: " + r.message.substr(0, 300);
  }
  if (r.message.find("Landlock") != std::string::npos ||
      r.message.find("landlock") != std::string::npos) {
    return "landlock: " + r.message.substr(0, 300);
  }
  return std::nullopt;
}

// ---- The service -----------------------------------------------------------------------------

// The route template of a path, for logs ("/v1/sessions/{id}/execute"); "-" for no route.
std::string RouteLabel(const std::string& path) {
  for (const char* fixed :
       {"/healthz", "/v1/execute", "/run", "/v1/tools", "/metrics", "/v1/sessions", "/mcp"}) {
    if (path == fixed) return path;
  }
  constexpr std::string_view kSessions = "/v1/sessions/";
  if (path.rfind(kSessions, 0) == 0) {
    const std::size_t slash = path.find('/', kSessions.size());
    if (slash == std::string::npos) return "/v1/sessions/{id}";
    const std::string action = path.substr(slash + 1);
    if (action == "execute" || action == "pause" || action == "resume") {
      return "/v1/sessions/{id}/" + action;
    }
  }
  return "-";
}

// What the router decided: a reply now, or work for the pool (with the caller's run slot).
struct Routed {
  Routed() = default;
  Routed(Reply reply) : now(std::move(reply)) {}  // NOLINT: implicit by design
  std::optional<Reply> now;
  std::function<Reply(const CancellationToken&)> work;
  std::shared_ptr<void> slot;
};

struct RequestInfo {
  std::string request_id;
  std::string token_id = "-";
  std::string route = "-";
};

class Service {
 public:
  Service(std::shared_ptr<CodeActProvider> provider, Authenticator auth, HttpServiceOptions options)
      : provider_(std::move(provider)),
        auth_(std::move(auth)),
        options_(std::move(options)),
        pool_(options_.max_concurrent, options_.max_queued),
        quotas_(options_.token_max_concurrent, options_.token_rate_per_s, options_.token_burst),
        ceilings_(provider_->Snapshot().limits),
        caller_sessions_(options_.sessions_per_caller),
        mcp_sessions_(McpLimits(options_)),
        access_(MakeAccessLogger(options_.access_log)),
        log_(MakeStderrLogger("codeact serve", true)) {}

  ~Service() { Shutdown(); }

  const HttpServiceOptions& options() const { return options_; }
  ServeMetrics& metrics() { return metrics_; }
  std::atomic<int>& connections() { return connections_; }
  std::atomic<bool>& draining() { return draining_; }
  spdlog::logger& log() { return *log_; }

  // Requests between their read and the end of their reply's write (drained at shutdown).
  void BeginRequest() {
    std::lock_guard lock(active_mu_);
    ++active_requests_;
  }
  void EndRequest() {
    std::lock_guard lock(active_mu_);
    --active_requests_;
    active_cv_.notify_all();
  }
  // Waits until no request is in flight or `deadline`; true when none is.
  bool WaitIdle(Clock::time_point deadline) {
    std::unique_lock lock(active_mu_);
    return active_cv_.wait_until(lock, deadline, [&] { return active_requests_ == 0; });
  }

  // The cancellation source of each run in flight, cancelled together at the end of the grace.
  std::shared_ptr<CancellationSource> TrackRun() {
    auto source = std::make_shared<CancellationSource>();
    std::lock_guard lock(runs_mu_);
    if (cancel_all_) source->Cancel("the server is shutting down");
    runs_.insert(source);
    return source;
  }
  void UntrackRun(const std::shared_ptr<CancellationSource>& source) {
    std::lock_guard lock(runs_mu_);
    runs_.erase(source);
  }
  void CancelAllRuns() {
    std::set<std::shared_ptr<CancellationSource>> runs;
    {
      std::lock_guard lock(runs_mu_);
      cancel_all_ = true;
      runs = runs_;
    }
    for (auto& s : runs) s->Cancel("the server is shutting down");
  }

  bool Submit(std::function<void()> task) { return pool_.TrySubmit(std::move(task)); }

  void Shutdown() {
    pool_.Stop();
    rest_sessions_.CloseAll();
    mcp_sessions_.Clear();
  }

  void Access(const RequestInfo& info, std::string_view method, int status,
              std::string_view outcome, Clock::duration took, std::size_t bytes_in,
              std::size_t bytes_out) {
    metrics_.CountResponse(status);
    if (!access_) return;
    json::object line{{"time", IsoTime()},
                      {"type", "access"},
                      {"request_id", info.request_id},
                      {"token_id", info.token_id},
                      {"method", method},
                      {"route", info.route},
                      {"status", status},
                      {"outcome", outcome.empty() ? json::value(nullptr) : json::value(outcome)},
                      {"duration_ms", std::chrono::duration<double, std::milli>(took).count()},
                      {"bytes_in", bytes_in},
                      {"bytes_out", bytes_out}};
    access_->info(SerializeJson(line));
  }

  // Everything after the connection read a whole request.
  Routed Route(const http::request<http::string_body>& req, RequestInfo& info) {
    const std::string target(req.target());
    const std::size_t q = target.find('?');
    const std::string path = target.substr(0, q);
    const std::string query = q == std::string::npos ? "" : target.substr(q + 1);

    info.route = RouteLabel(path);
    if (auto refused = CheckHostAndOrigin(req)) return Refuse(std::move(*refused));
    if (path == "/healthz") {
      info.route = "/healthz";
      if (req.method() != http::verb::get && req.method() != http::verb::head) {
        return {MethodNotAllowed("GET")};
      }
      if (draining_) {
        return {JsonReply(http::status::service_unavailable, json::object{{"status", "draining"}})};
      }
      return {JsonReply(http::status::ok, json::object{{"status", "ok"}})};
    }

    const auto authorization = req[http::field::authorization];
    auto caller =
        auth_.Authenticate(std::string_view(authorization.data(), authorization.size()), NowUnix());
    if (!caller.ok()) {
      metrics_.CountRejected("unauthorized");
      Reply r = ErrorReply(http::status::unauthorized, "unauthorized", caller.status().message());
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return {std::move(r)};
    }
    info.token_id = caller->token_id.substr(0, 128);
    if (draining_) {
      return Refuse(ErrorReply(http::status::service_unavailable, "shutting_down",
                               "the server is shutting down"));
    }
    if (auto wait = quotas_.TakeRequest(caller->owner)) return Refuse(RateRefusal(*wait));
    if (req.method() == http::verb::post) {
      const std::string type = MediaType(req[http::field::content_type]);
      if (type != kJson) {
        return Refuse(ErrorReply(http::status::unsupported_media_type, "unsupported_media_type",
                                 "a POST needs Content-Type: application/json"));
      }
    }
    return Dispatch(req, path, query, *caller, info);
  }

  std::int64_t OpenConnections() const { return connections_.load(); }

 private:
  static std::shared_ptr<spdlog::logger> MakeAccessLogger(bool enabled) {
    // The access line is its own JSON object, one per line, whatever --log-format says.
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto logger = std::make_shared<spdlog::logger>("codeact serve access", sink);
    logger->set_pattern("%v");
    logger->set_level(enabled ? spdlog::level::info : spdlog::level::off);
    logger->flush_on(spdlog::level::info);
    return logger;
  }

  Reply RateRefusal(int wait_s) const {
    Reply r = ErrorReply(http::status::too_many_requests, "token_rate",
                         "this caller's rate is over the server's limit of " +
                             std::to_string(options_.token_rate_per_s) +
                             " per second (a request, or each run it asks for)");
    r.headers.emplace_back("Retry-After", std::to_string(wait_s));
    return r;
  }

  Routed Refuse(Reply r) {
    metrics_.CountRejected(r.outcome);
    return {std::move(r)};
  }

  static Reply MethodNotAllowed(const std::string& allow) {
    Reply r = ErrorReply(http::status::method_not_allowed, "method_not_allowed",
                         "method not allowed; this route takes " + allow);
    r.headers.emplace_back("Allow", allow);
    return r;
  }

  // DNS rebinding and cross-site requests (MCP "Security Warning"): a foreign Origin or, on a
  // loopback listener, a non-loopback Host name is refused before anything else.
  std::optional<Reply> CheckHostAndOrigin(const http::request<http::string_body>& req) const {
    const std::string host_value(req[http::field::host]);
    if (host_value.empty()) {
      return ErrorReply(http::status::bad_request, "bad_host", "a request needs a Host header");
    }
    const std::optional<HostHeader> host = ParseHostHeader(host_value);
    if (!host) {
      return ErrorReply(http::status::bad_request, "bad_host",
                        "Host \"" + host_value.substr(0, 200) + "\" is not host[:port]");
    }
    if (!HostAllowed(*host, options_.allowed_hosts, IsLoopbackHost(options_.host))) {
      return ErrorReply(http::status::forbidden, "forbidden_host",
                        "Host \"" + host_value.substr(0, 200) +
                            "\" is not one this server answers to (--allow-host)");
    }
    const auto origin_field = req.find(http::field::origin);
    if (origin_field != req.end()) {
      const std::string origin(origin_field->value());
      const bool allowed =
          std::find(options_.allowed_origins.begin(), options_.allowed_origins.end(), origin) !=
          options_.allowed_origins.end();
      if (!allowed) {
        return ErrorReply(
            http::status::forbidden, "forbidden_origin",
            "Origin \"" + origin.substr(0, 200) + "\" is not allowed (--allow-origin)");
      }
    }
    return std::nullopt;
  }

  // The request's JSON object body, or a 400 reply.
  std::variant<json::object, Reply> BodyObject(const http::request<http::string_body>& req,
                                               bool empty_ok) {
    if (req.body().empty() && empty_ok) return json::object{};
    json::error_code ec;
    json::value v = ParseJson(req.body(), ec);
    if (ec) {
      metrics_.CountRejected("bad_json");
      return ErrorReply(http::status::bad_request, "bad_json",
                        "the body is not valid JSON: " + JsonErrorText(ec));
    }
    if (!v.is_object()) {
      metrics_.CountRejected("bad_json");
      return ErrorReply(http::status::bad_request, "bad_json", "the body must be a JSON object");
    }
    return std::move(v.as_object());
  }

  Routed BadRequest(const std::string& message) {
    return Refuse(ErrorReply(http::status::bad_request, "bad_request", message));
  }

  Routed Dispatch(const http::request<http::string_body>& req, const std::string& path,
                  const std::string& query, const CallerIdentity& caller, RequestInfo& info) {
    const http::verb method = req.method();
    if (path == "/v1/execute" || path == "/run") {
      info.route = path;
      if (method != http::verb::post) return {MethodNotAllowed("POST")};
      auto body = BodyObject(req, false);
      if (auto* r = std::get_if<Reply>(&body)) return {std::move(*r)};
      return path == "/run" ? SeedRun(std::get<json::object>(body), caller)
                            : Execute(std::get<json::object>(body), caller);
    }
    if (path == "/v1/tools") {
      info.route = path;
      if (method != http::verb::get) return {MethodNotAllowed("GET")};
      return Tools(query);
    }
    if (path == "/metrics") {
      info.route = path;
      if (method != http::verb::get) return {MethodNotAllowed("GET")};
      ServeGauges g;
      g.sessions_open = provider_->OpenSessionCount();
      g.runs_in_flight = pool_.running();
      g.runs_queued = pool_.queued();
      g.worker_pool_size = options_.max_concurrent;
      g.queue_capacity = static_cast<std::int64_t>(options_.max_queued);
      g.connections_open = connections_.load();
      Reply r;
      r.body = metrics_.Render(g);
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      return {std::move(r)};
    }
    if (path == "/v1/sessions") {
      info.route = path;
      if (method == http::verb::get) return ListSessions(caller);
      if (method != http::verb::post) return {MethodNotAllowed("GET, POST")};
      auto body = BodyObject(req, true);
      if (auto* r = std::get_if<Reply>(&body)) return {std::move(*r)};
      if (!std::get<json::object>(body).empty()) {
        return BadRequest("POST /v1/sessions takes an empty object");
      }
      return OpenSession(caller);
    }
    constexpr std::string_view kSessions = "/v1/sessions/";
    if (path.rfind(kSessions, 0) == 0) {
      const std::string rest = path.substr(kSessions.size());
      const std::size_t slash = rest.find('/');
      const std::string id = rest.substr(0, slash);
      const std::string action = slash == std::string::npos ? "" : rest.substr(slash + 1);
      if (action.empty()) {
        info.route = "/v1/sessions/{id}";
        if (method != http::verb::delete_) return {MethodNotAllowed("DELETE")};
        return CloseSession(id, caller);
      }
      if (action != "execute" && action != "pause" && action != "resume") {
        return Refuse(ErrorReply(http::status::not_found, "not_found", "no such route"));
      }
      info.route = "/v1/sessions/{id}/" + action;
      if (method != http::verb::post) return {MethodNotAllowed("POST")};
      auto body = BodyObject(req, action != "execute");
      if (auto* r = std::get_if<Reply>(&body)) return {std::move(*r)};
      if (action == "execute") {
        json::object& o = std::get<json::object>(body);
        if (o.contains("session")) return BadRequest("the session is named by the path");
        o["session"] = id;
        return Execute(o, caller);
      }
      return PauseResume(id, action == "pause", caller);
    }
    if (path == "/mcp") {
      info.route = "/mcp";
      return Mcp(req, caller);
    }
    return Refuse(
        ErrorReply(http::status::not_found, "not_found", "no such route: " + path.substr(0, 200)));
  }

  Routed Tools(const std::string& query) {
    std::string format_name = "openai";
    std::size_t start = 0;
    while (start <= query.size() && !query.empty()) {
      const std::size_t amp = query.find('&', start);
      const std::string pair = query.substr(start, amp == std::string::npos ? amp : amp - start);
      if (pair.rfind("format=", 0) == 0) format_name = pair.substr(7);
      if (amp == std::string::npos) break;
      start = amp + 1;
    }
    const auto format = ParseDefinitionFormat(format_name);
    if (!format) {
      return BadRequest("format is openai, openai-responses, anthropic or mcp, got \"" +
                        format_name.substr(0, 100) + "\"");
    }
    ClientSessions describer(provider_);  // its definition includes the "session" argument
    json::error_code ec;
    json::value definition = ParseJson(describer.Definition(*format), ec);
    if (ec) return {ErrorReply(http::status::internal_server_error, "internal", "bad definition")};
    return {JsonReply(http::status::ok, json::object{{"tools", json::array{std::move(definition)}},
                                                     {"instructions", provider_->Instructions()}})};
  }

  // The limits of one run: the server's, with what the body asks for (never above a ceiling).
  std::variant<ExecutionLimits, std::string> RequestLimits(const json::object& body,
                                                           bool* any) const {
    ExecutionLimits limits = ceilings_;
    *any = false;
    if (const json::value* t = body.if_contains("timeout_s")) {
      if (!t->is_number()) return std::string("timeout_s must be a number of seconds");
      const double seconds = t->to_number<double>();
      if (!std::isfinite(seconds) || seconds <= 0) return std::string("timeout_s must be positive");
      const double ms = seconds * 1000;
      if (ms > static_cast<double>(ceilings_.wall_timeout_ms)) {
        return "timeout_s " + SerializeJson(*t) +
               " is over the server's ceiling wall_timeout_ms = " +
               std::to_string(ceilings_.wall_timeout_ms) + " ms";
      }
      limits.wall_timeout_ms = std::max<std::int64_t>(1, std::llround(ms));
      *any = true;
    }
    if (const json::value* l = body.if_contains("limits")) {
      if (!l->is_object()) return std::string("limits must be an object");
      for (const auto& [key, value] : l->as_object()) {
        const LimitSpec* spec = nullptr;
        for (const LimitSpec& s : LimitTable()) {
          if (s.name == key) spec = &s;
        }
        if (spec == nullptr) return "limits." + std::string(key) + " is not a limit";
        if (!value.is_int64() && !value.is_uint64()) {
          return "limits." + std::string(key) + " must be an integer (" + std::string(spec->unit) +
                 ")";
        }
        const bool big =
            value.is_uint64() && value.as_uint64() > static_cast<std::uint64_t>(INT64_MAX);
        const std::int64_t v = big ? INT64_MAX : value.to_number<std::int64_t>();
        const std::int64_t ceiling = ceilings_.*(spec->member);
        if (big || v > ceiling) {
          return "limits." + std::string(key) + " = " + SerializeJson(value) +
                 " is over the server's ceiling " + std::string(key) + " = " +
                 std::to_string(ceiling) + " " + std::string(spec->unit);
        }
        limits.*(spec->member) = v;
        *any = true;
      }
    }
    if (*any) {
      if (Status s = CheckLimits(limits); !s.ok()) return s.message();
    }
    return limits;
  }

  // One run through the pool, with its metrics and its security line.
  ExecutionResult Record(ExecutionResult result, const CallerIdentity& caller) {
    metrics_.CountExecution(OutcomeName(result.outcome),
                            static_cast<double>(result.duration_ms) / 1000.0, result.tool_calls);
    if (auto denial = SecurityDenial(result)) {
      log_->warn("{}", SerializeJson(json::object{{"type", "security"},
                                                  {"token_id", caller.token_id},
                                                  {"outcome", OutcomeName(result.outcome)},
                                                  {"denial", *denial}}));
    }
    if (current_outcome != nullptr) *current_outcome = std::string(OutcomeName(result.outcome));
    return result;
  }

  // Reserves the caller's run slot, or the 429 that says it is taken.
  std::variant<std::shared_ptr<void>, Reply> RunSlot(const CallerIdentity& caller) {
    auto slot = quotas_.TakeRun(caller.owner);
    if (!slot) {
      metrics_.CountRejected("token_concurrency");
      Reply r =
          ErrorReply(http::status::too_many_requests, "token_concurrency",
                     "this caller already has " + std::to_string(options_.token_max_concurrent) +
                         " runs in flight (the server's per-caller limit)");
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    return *slot;
  }

  Routed Execute(const json::object& body, const CallerIdentity& caller) {
    for (const auto& [key, value] : body) {
      if (key != "code" && key != "session" && key != "timeout_s" && key != "limits") {
        return BadRequest("unknown field \"" + std::string(key).substr(0, 100) +
                          "\" (fields: code, session, timeout_s, limits)");
      }
    }
    const json::value* code = body.if_contains("code");
    if (code == nullptr || !code->is_string()) return BadRequest("\"code\" (a string) is required");
    std::shared_ptr<Session> session;
    if (const json::value* s = body.if_contains("session")) {
      if (!s->is_string()) return BadRequest("\"session\" must be a session id (a string)");
      session = rest_sessions_.Find(std::string(s->as_string()), caller.owner);
      if (!session) {
        return Refuse(ErrorReply(
            http::status::not_found, "session_not_found",
            "no session \"" + std::string(s->as_string()).substr(0, 100) + "\" of this caller"));
      }
    }
    bool any = false;
    auto limits = RequestLimits(body, &any);
    if (auto* message = std::get_if<std::string>(&limits)) return BadRequest(*message);
    if (session && any) {
      return BadRequest(
          "a session's runs take the session's limits: timeout_s and limits are refused with "
          "session");
    }
    auto slot = RunSlot(caller);
    if (auto* r = std::get_if<Reply>(&slot)) return Refuse(std::move(*r));
    Routed routed;
    routed.slot = std::get<std::shared_ptr<void>>(slot);
    const ExecutionLimits run_limits = std::get<ExecutionLimits>(limits);
    routed.work = [this, caller, session, any, run_limits,
                   code_text = std::string(code->as_string())](const CancellationToken& cancel) {
      InvokeOptions invoke = options_.invoke;
      invoke.cancel = cancel;
      invoke.tenant = caller.owner;  // warm children and zygotes per caller (docs/warm-pool.md)
      ExecutionResult result;
      if (session) {
        result = session->Execute(code_text, invoke);
      } else if (any) {
        RunSnapshot snapshot = provider_->Snapshot();
        snapshot.limits = run_limits;
        // Equal fingerprints may share warm state (provider.hpp): the request's limits are part
        // of this run's.
        snapshot.fingerprint =
            Sha256Hex(snapshot.fingerprint + "|request-limits|" + LimitKey(run_limits, false));
        result = provider_->Execute(code_text, snapshot, invoke);
      } else {
        result = provider_->Execute(code_text, invoke);
      }
      result = Record(std::move(result), caller);
      Reply r;
      r.body = ToJson(result);
      r.outcome = std::string(OutcomeName(result.outcome));
      return r;
    };
    return routed;
  }

  // The seeds' shape: {lang: "python", code, timeout (seconds)} -> {ok, returncode, stdout,
  // stderr, error}.
  Routed SeedRun(const json::object& body, const CallerIdentity& caller) {
    for (const auto& [key, value] : body) {
      if (key != "lang" && key != "code" && key != "timeout") {
        return BadRequest("unknown field \"" + std::string(key).substr(0, 100) +
                          "\" (fields: lang, code, timeout)");
      }
    }
    const json::value* lang = body.if_contains("lang");
    if (lang == nullptr || !lang->is_string() || lang->as_string() != "python") {
      return BadRequest("\"lang\" must be \"python\": this server runs python only");
    }
    const json::value* code = body.if_contains("code");
    if (code == nullptr || !code->is_string()) return BadRequest("\"code\" (a string) is required");
    json::object execute{{"code", *code}};
    if (const json::value* t = body.if_contains("timeout")) {
      if (!t->is_number()) return BadRequest("\"timeout\" must be a number of seconds");
      const double seconds = t->to_number<double>();
      if (!std::isfinite(seconds) || seconds <= 0) {
        return BadRequest("\"timeout\" must be a positive number of seconds");
      }
      if (seconds * 1000 > static_cast<double>(ceilings_.wall_timeout_ms)) {
        return BadRequest("timeout " + SerializeJson(*t) +
                          " is over the server's ceiling wall_timeout_ms = " +
                          std::to_string(ceilings_.wall_timeout_ms) + " ms");
      }
      execute["timeout_s"] = *t;
    }
    Routed routed = Execute(execute, caller);
    if (!routed.work) return routed;
    auto run = std::move(routed.work);
    routed.work = [run](const CancellationToken& cancel) {
      Reply r = run(cancel);
      auto parsed = ExecutionResultFromJson(r.body);
      if (!parsed.ok()) return r;
      const ExecutionResult& result = *parsed;
      json::value error = nullptr;
      if (!result.success()) {
        if (result.error) {
          error = result.error->type + ": " + result.error->message;
        } else {
          error = std::string(OutcomeName(result.outcome)) +
                  (result.message.empty() ? "" : ": " + result.message);
        }
      }
      r.body = SerializeJson(json::object{{"ok", result.success()},
                                          {"returncode", result.exit_code},
                                          {"stdout", result.stdout_text},
                                          {"stderr", result.stderr_text},
                                          {"error", error}});
      return r;
    };
    return routed;
  }

  static http::status StatusFor(const Status& s) {
    switch (s.code()) {
      case StatusCode::kNotFound:
        return http::status::not_found;
      case StatusCode::kResourceExhausted:
        return http::status::too_many_requests;
      case StatusCode::kInvalidArgument:
        return http::status::bad_request;
      case StatusCode::kFailedPrecondition:
        return http::status::conflict;
      default:
        return http::status::service_unavailable;
    }
  }

  Routed OpenSession(const CallerIdentity& caller) {
    Routed routed;
    routed.work = [this, caller](const CancellationToken&) {
      const std::string id = "ses_" + RandomHex(16);
      auto session = caller_sessions_.Open(
          caller.owner, [&] { return provider_->OpenSession(SessionOptions{id}); });
      if (!session.ok()) {
        Reply r =
            ErrorReply(StatusFor(session.status()), "session_refused", session.status().message());
        if (r.status == http::status::too_many_requests) r.headers.emplace_back("Retry-After", "5");
        return r;
      }
      rest_sessions_.Add(RestSession{id, caller.owner, *session});
      Reply r = JsonReply(http::status::created, json::object{{"session", id}}, "created");
      r.headers.emplace_back("Location", "/v1/sessions/" + id);
      return r;
    };
    return routed;
  }

  Routed ListSessions(const CallerIdentity& caller) {
    json::array list;
    auto seconds = [](std::chrono::system_clock::time_point t) {
      return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
    };
    for (const RestSession& s : rest_sessions_.List(caller.owner)) {
      list.push_back(json::object{{"session", s.id},
                                  {"paused", s.session->paused()},
                                  {"created_unix_s", seconds(s.session->created())},
                                  {"last_used_unix_s", seconds(s.session->last_used())}});
    }
    return {JsonReply(http::status::ok, json::object{{"sessions", std::move(list)}})};
  }

  Reply SessionNotFound(const std::string& id) {
    metrics_.CountRejected("session_not_found");
    return ErrorReply(http::status::not_found, "session_not_found",
                      "no session \"" + id.substr(0, 100) + "\" of this caller");
  }

  Routed CloseSession(const std::string& id, const CallerIdentity& caller) {
    auto session = rest_sessions_.Remove(id, caller.owner);
    if (!session) return {SessionNotFound(id)};
    Routed routed;
    routed.work = [session, id](const CancellationToken&) {
      session->Close();
      return JsonReply(http::status::ok, json::object{{"session", id}, {"closed", true}}, "closed");
    };
    return routed;
  }

  Routed PauseResume(const std::string& id, bool pause, const CallerIdentity& caller) {
    auto session = rest_sessions_.Find(id, caller.owner);
    if (!session) return {SessionNotFound(id)};
    Routed routed;
    routed.work = [session, id, pause](const CancellationToken&) {
      Status s = pause ? session->Pause() : session->Resume();
      if (!s.ok())
        return ErrorReply(StatusFor(s), pause ? "pause_failed" : "resume_failed", s.message());
      return JsonReply(http::status::ok,
                       json::object{{"session", id}, {"paused", session->paused()}},
                       pause ? "paused" : "resumed");
    };
    return routed;
  }

  // MCP Streamable HTTP: POST one JSON-RPC message (or a batch); the reply is JSON, or one SSE
  // event when the client accepts only text/event-stream. `initialize` opens an MCP session
  // (Mcp-Session-Id); every later request must carry it (missing: 400, unknown: 404). DELETE
  // ends it; GET (a server-initiated stream) is not offered: 405.
  Routed Mcp(const http::request<http::string_body>& req, const CallerIdentity& caller) {
    const std::string session_id(req["Mcp-Session-Id"]);
    if (req.method() == http::verb::delete_) {
      if (!mcp_sessions_.Remove(session_id, caller.owner)) {
        return Refuse(ErrorReply(http::status::not_found, "mcp_session_not_found",
                                 "no MCP session with this Mcp-Session-Id"));
      }
      return {JsonReply(http::status::ok, json::object{{"closed", true}}, "closed")};
    }
    if (req.method() != http::verb::post) return {MethodNotAllowed("POST, DELETE")};
    json::error_code ec;
    const json::value message = ParseJson(req.body(), ec);
    if (ec) {
      // JSON-RPC's own parse error, as the stdio server answers it.
      metrics_.CountRejected("bad_json");
      Reply r = JsonReply(
          http::status::bad_request,
          json::object{{"jsonrpc", "2.0"},
                       {"id", nullptr},
                       {"error", json::object{{"code", -32700},
                                              {"message", "Parse error: " + JsonErrorText(ec)}}}},
          "bad_json");
      return {std::move(r)};
    }
    const json::value* method =
        message.is_object() ? message.as_object().if_contains("method") : nullptr;
    // Every route that runs code takes the caller's run slot and one of its rate per run: the
    // request paid for one in Route, a 2025-03-26 batch pays for the rest of its tools/call.
    // McpServer::HandleMessage runs a batch's calls one after another, so one slot holds for all.
    std::size_t runs = 0;
    const auto count_call = [&runs](const json::value& m) {
      const json::value* name = m.is_object() ? m.as_object().if_contains("method") : nullptr;
      if (name != nullptr && name->is_string() && name->as_string() == "tools/call") ++runs;
    };
    if (message.is_array()) {
      for (const json::value& m : message.as_array()) count_call(m);
    } else {
      count_call(message);
    }
    std::shared_ptr<void> slot;
    if (runs > 0) {
      if (quotas_.limits_rate() && static_cast<double>(runs) > quotas_.burst()) {
        Reply r = ErrorReply(http::status::too_many_requests, "token_rate",
                             "this batch runs code " + std::to_string(runs) +
                                 " times, over this caller's burst of " +
                                 std::to_string(static_cast<long long>(quotas_.burst())) +
                                 " runs: send fewer tools/call per batch");
        r.headers.emplace_back("Retry-After", "1");
        return Refuse(std::move(r));
      }
      if (auto wait = quotas_.TakeRequest(caller.owner, static_cast<double>(runs - 1))) {
        return Refuse(RateRefusal(*wait));
      }
      auto taken = RunSlot(caller);
      if (auto* r = std::get_if<Reply>(&taken)) return Refuse(std::move(*r));
      slot = std::get<std::shared_ptr<void>>(taken);
    }
    const bool is_initialize =
        method != nullptr && method->is_string() && method->as_string() == "initialize";
    std::shared_ptr<McpServer> server;
    std::string new_id;
    McpHttpSession fresh;
    std::shared_ptr<McpSessionTable::Reservation> place;
    std::shared_ptr<void> in_use;  // the session does not expire while this request works
    if (is_initialize) {
      auto [reserved, refusal] = mcp_sessions_.Reserve(caller.owner, Clock::now());
      if (refusal) {
        Reply r = ErrorReply(http::status::too_many_requests, refusal->reason, refusal->message);
        r.headers.emplace_back("Retry-After", std::to_string(refusal->retry_after_s));
        return Refuse(std::move(r));
      }
      place = std::move(reserved);
      new_id = "mcp_" + RandomHex(16);
      fresh = NewMcpSession(caller);
      server = fresh.server;
    } else {
      if (session_id.empty()) {
        return BadRequest("an MCP request other than initialize needs the Mcp-Session-Id header");
      }
      server = mcp_sessions_.Use(session_id, caller.owner, Clock::now(), &in_use);
      if (!server) {
        return Refuse(ErrorReply(http::status::not_found, "mcp_session_not_found",
                                 "no MCP session with this Mcp-Session-Id; initialize again"));
      }
    }
    const std::string accept = AsciiLower(std::string(req[http::field::accept]));
    const bool sse = accept.find("text/event-stream") != std::string::npos &&
                     accept.find("application/json") == std::string::npos;
    auto answer = [this, server, new_id, fresh, sse, place, in_use,
                   body = req.body()](const CancellationToken& cancel) {
      std::string outcome;
      current_outcome = &outcome;
      std::optional<std::string> response = server->HandleMessage(body, cancel);
      current_outcome = nullptr;
      Reply r;
      r.outcome = outcome;
      if (!new_id.empty()) {
        // The session exists once initialize succeeded: a failed one leaves nothing behind.
        if (response && response->find("\"error\"") == std::string::npos) {
          mcp_sessions_.Commit(place, new_id,
                               McpSessionTable::Entry{fresh.owner, fresh.server, fresh.sessions},
                               Clock::now());
          r.headers.emplace_back("Mcp-Session-Id", new_id);
        }
      }
      if (!response) {
        r.status = http::status::accepted;  // notifications and responses only
        r.body.clear();
        return r;
      }
      if (sse) {
        r.content_type = "text/event-stream";
        r.headers.emplace_back("Cache-Control", "no-cache");
        r.body = "event: message\ndata: " + *response + "\n\n";
      } else {
        r.body = std::move(*response);
      }
      return r;
    };
    Routed routed;
    routed.work = std::move(answer);
    routed.slot = std::move(slot);
    return routed;
  }

  // An MCP session's server and named sessions; registered once its initialize succeeded.
  McpHttpSession NewMcpSession(const CallerIdentity& caller) {
    auto sessions = std::make_shared<ClientSessions>(
        provider_, [this, owner = caller.owner](const SessionOptions& session_options) {
          return caller_sessions_.Open(owner,
                                       [&] { return provider_->OpenSession(session_options); });
        });
    McpServerOptions o;
    o.server_name = "codeact";
    o.instructions = provider_->Instructions();
    o.log_to_stderr = false;  // the access line says what happened
    o.max_line_bytes = options_.max_body_bytes;
    o.tool_definition = [sessions] { return sessions->Definition(DefinitionFormat::kMcp); };
    InvokeOptions invoke = options_.invoke;
    invoke.tenant = caller.owner;  // warm children and zygotes per caller (docs/warm-pool.md)
    o.execute = [this, sessions, invoke, caller](const std::string& arguments_json,
                                                 const CancellationToken& cancel) {
      InvokeOptions call = invoke;
      call.cancel = cancel;
      return Record(sessions->Invoke(arguments_json, call), caller);
    };
    McpHttpSession s;
    s.owner = caller.owner;
    s.sessions = sessions;
    s.server = std::make_shared<McpServer>(std::move(o));
    return s;
  }

  const std::shared_ptr<CodeActProvider> provider_;
  const Authenticator auth_;
  const HttpServiceOptions options_;
  ServeMetrics metrics_;
  WorkPool pool_;
  CallerQuotas quotas_;
  const ExecutionLimits ceilings_;
  RestSessions rest_sessions_;
  CallerSessions caller_sessions_;
  McpSessionTable mcp_sessions_;
  std::shared_ptr<spdlog::logger> access_;
  std::shared_ptr<spdlog::logger> log_;
  std::atomic<int> connections_{0};
  std::atomic<bool> draining_{false};
  std::mutex active_mu_;
  std::condition_variable active_cv_;
  int active_requests_ = 0;
  std::mutex runs_mu_;
  bool cancel_all_ = false;
  std::set<std::shared_ptr<CancellationSource>> runs_;
};

// ---- Framing (RFC 9112) -----------------------------------------------------------------------

// What the parser leaves to the application: a request whose length the server and a proxy in
// front of it could read differently (request smuggling) is refused with 400 and the
// connection closed, before its body is read.
struct FramingRefusal {
  http::status status;
  std::string message;
};

std::optional<FramingRefusal> FramingError(const http::request_header<>& req) {
  const auto bad = [](std::string message) {
    return FramingRefusal{http::status::bad_request, std::move(message)};
  };
  if (req.count(http::field::host) > 1) {
    return bad("a request has one Host header line (RFC 9112 3.2)");
  }
  const std::size_t lengths = req.count(http::field::content_length);
  if (lengths > 1 ||
      (lengths == 1 && req[http::field::content_length].find(',') != std::string_view::npos)) {
    return bad("a request has at most one Content-Length, holding one number (RFC 9112 6.3)");
  }
  if (req.count(http::field::transfer_encoding) == 0) return std::nullopt;
  if (req.version() < 11) {
    return bad("Transfer-Encoding in an HTTP/1.0 request is faulty framing (RFC 9112 6.1)");
  }
  if (lengths > 0) {
    return bad("a request has Transfer-Encoding or Content-Length, not both (RFC 9112 6.1)");
  }
  std::vector<std::string> codings;
  const auto [first, last] = req.equal_range(http::field::transfer_encoding);
  for (auto it = first; it != last; ++it) {
    const std::string_view value = it->value();
    std::size_t start = 0;
    while (start <= value.size()) {
      const std::size_t comma = std::min(value.find(',', start), value.size());
      std::string_view item = value.substr(start, comma - start);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      if (!item.empty()) codings.push_back(AsciiLower(item));
      start = comma + 1;
    }
  }
  if (codings.empty() || codings.back() != "chunked") {
    return bad("the last transfer coding of a request must be chunked (RFC 9112 6.3)");
  }
  if (std::count(codings.begin(), codings.end(), "chunked") > 1) {
    return bad("chunked is applied once (RFC 9112 7)");
  }
  if (codings.size() > 1) {
    return FramingRefusal{http::status::not_implemented,
                          "transfer codings other than chunked are not implemented"};
  }
  return std::nullopt;
}

// ---- One connection --------------------------------------------------------------------------

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, Service& service) : stream_(std::move(socket)), service_(service) {
    ++service_.connections();
  }
  ~Connection() { --service_.connections(); }

  void Start() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Connection::Read, shared_from_this()));
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->body_limit(service_.options().max_body_bytes);
    parser_->header_limit(kMaxHeaderBytes);
    stream_.expires_after(service_.options().request_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Connection::OnHeader, shared_from_this()));
  }

  // The header alone first: its framing is checked before a body is read by it.
  void OnHeader(beast::error_code ec, std::size_t bytes) {
    if (ec) return OnRead(ec, bytes);
    if (auto refused = FramingError(parser_->get().base())) {
      started_ = Clock::now();
      info_ = RequestInfo{};
      info_.request_id = "req_" + RandomHex(8);
      bytes_in_ = bytes;
      method_ = std::string(parser_->get().method_string());
      service_.metrics().CountRejected("bad_framing");
      keep_alive_ = false;
      service_.BeginRequest();
      Reply r = ErrorReply(refused->status, "bad_framing", refused->message);
      return Send(std::move(r));
    }
    const auto& fields = parser_->get().base();
    header_fields_ = static_cast<std::size_t>(std::distance(fields.begin(), fields.end()));
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this(), bytes](beast::error_code body_ec, std::size_t more) {
          self->DropTrailers();
          self->OnRead(body_ec, bytes + more);
        });
  }

  // Beast adds a chunked body's trailer fields to the header; a server must not merge them
  // (RFC 9110 6.5.1): a trailer could otherwise add the Authorization, a second Host or the
  // Mcp-Session-Id that the header did not have. They are dropped.
  void DropTrailers() {
    auto& fields = parser_->get().base();
    std::size_t i = 0;
    for (auto it = fields.begin(); it != fields.end();) {
      it = i++ < header_fields_ ? std::next(it) : fields.erase(it);
    }
  }

  void OnRead(beast::error_code ec, std::size_t bytes) {
    started_ = Clock::now();
    info_ = RequestInfo{};
    info_.request_id = "req_" + RandomHex(8);
    bytes_in_ = bytes;
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted) {
      return Close();
    }
    if (ec == http::error::body_limit) {
      service_.metrics().CountRejected("body_too_large");
      keep_alive_ = false;
      service_.BeginRequest();
      return Send(ErrorReply(http::status::payload_too_large, "body_too_large",
                             "the body is over the server's limit of " +
                                 std::to_string(service_.options().max_body_bytes) + " bytes"));
    }
    if (ec == http::error::header_limit) {
      service_.metrics().CountRejected("header_too_large");
      keep_alive_ = false;
      service_.BeginRequest();
      return Send(ErrorReply(http::status::request_header_fields_too_large, "header_too_large",
                             "the header is over " + std::to_string(kMaxHeaderBytes) + " bytes"));
    }
    if (ec) {
      if (ec.category() == http::make_error_code(http::error::bad_target).category()) {
        service_.metrics().CountRejected("bad_http");
        keep_alive_ = false;
        service_.BeginRequest();
        return Send(ErrorReply(http::status::bad_request, "bad_http",
                               "malformed HTTP request: " + ec.message()));
      }
      return Close();
    }
    service_.BeginRequest();
    const auto& req = parser_->get();
    method_ = std::string(req.method_string());
    keep_alive_ = req.keep_alive() && !service_.draining();
    const auto id = req["X-Request-Id"];
    if (!id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        })) {
      info_.request_id = std::string(id);
    }
    Routed routed;
    try {
      routed = service_.Route(req, info_);
    } catch (const std::exception& e) {
      routed.now = ErrorReply(http::status::internal_server_error, "internal", e.what());
    }
    if (routed.now) return Send(std::move(*routed.now));

    // Work for the pool: a cancellation source of its own, and the socket watched meanwhile.
    source_ = service_.TrackRun();
    auto self = shared_from_this();
    auto work = std::move(routed.work);
    auto slot = std::move(routed.slot);
    const CancellationToken token = source_->token();
    const bool queued = service_.Submit([self, work, slot, token]() mutable {
      Reply reply;
      try {
        reply = work(token);
      } catch (const std::exception& e) {
        reply = ErrorReply(http::status::internal_server_error, "internal", e.what());
      }
      slot.reset();
      net::post(self->stream_.get_executor(),
                [self, reply = std::move(reply)]() mutable { self->OnWorkDone(std::move(reply)); });
    });
    if (!queued) {
      service_.UntrackRun(source_);
      source_.reset();
      service_.metrics().CountRejected("queue_full");
      Reply r = ErrorReply(http::status::too_many_requests, "queue_full",
                           "every worker is busy and the queue is full; retry later");
      r.headers.emplace_back("Retry-After", "1");
      return Send(std::move(r));
    }
    working_ = true;
    stream_.expires_never();
    WatchForHangUp();
  }

  // A client that closes its connection while its run works cancels the run. Bytes it sends
  // meanwhile (a pipelined request) are read into the request buffer, where the next read finds
  // them, and the watch goes on: a byte and then a hang-up is a hang-up. Past a whole request's
  // worth of such bytes (header and body limits) the server stops reading, and the hang-up is
  // noticed when the reply is written.
  void WatchForHangUp() {
    beast::get_lowest_layer(stream_).socket().async_wait(
        tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
          // Nothing reads buffer_ while the run works; once it has ended (working_ false) the
          // next request's read may, so the buffer is left alone.
          if (ec || !self->working_) return;
          const std::size_t cap = kMaxHeaderBytes + self->service_.options().max_body_bytes;
          if (self->buffer_.size() >= cap) return;
          const auto space =
              self->buffer_.prepare(std::min<std::size_t>(16 * 1024, cap - self->buffer_.size()));
          const int fd = beast::get_lowest_layer(self->stream_).socket().native_handle();
          const ssize_t n = ::recv(fd, space.data(), space.size(), MSG_DONTWAIT);
          if (n > 0) {
            self->buffer_.commit(static_cast<std::size_t>(n));
          } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            self->client_gone_ = true;
            if (self->source_) self->source_->Cancel("the client disconnected");
            return;
          }
          self->WatchForHangUp();
        });
  }

  void OnWorkDone(Reply reply) {
    working_ = false;
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().cancel(ignored);
    service_.UntrackRun(source_);
    source_.reset();
    if (client_gone_) {
      // Nobody to answer: the access line says so (499, as the reverse proxies log it).
      service_.Access(info_, method_, 499, reply.outcome, Clock::now() - started_, bytes_in_, 0);
      service_.EndRequest();
      return Close();
    }
    if (service_.draining()) keep_alive_ = false;
    Send(std::move(reply));
  }

  void Send(Reply reply) {
    auto res = std::make_shared<http::response<http::string_body>>(reply.status, 11);
    res->set(http::field::server, "codeact");
    res->set(http::field::content_type, reply.content_type);
    res->set("X-Request-Id", info_.request_id);
    for (const auto& [name, value] : reply.headers) res->set(name, value);
    res->body() = std::move(reply.body);
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    response_ = res;
    outcome_ = std::move(reply.outcome);
    stream_.expires_after(service_.options().request_timeout);
    http::async_write(stream_, *res,
                      beast::bind_front_handler(&Connection::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, std::size_t bytes) {
    service_.Access(info_, method_, static_cast<int>(response_->result_int()), outcome_,
                    Clock::now() - started_, bytes_in_, bytes);
    service_.EndRequest();
    response_.reset();
    if (ec || !keep_alive_) return Linger();
    Read();
  }

  // Closing with unread bytes would reset the connection and could destroy the reply (a 413
  // before the client sent its whole body): send FIN, then read and discard for a moment.
  void Linger() {
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(2));
    discard_ = std::make_shared<std::array<char, 8192>>();
    DiscardMore();
  }
  void DiscardMore() {
    stream_.async_read_some(net::buffer(*discard_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->discarded_ += n;
                              if (ec || self->discarded_ > (8u << 20)) return self->Close();
                              self->DiscardMore();
                            });
  }

  void Close() {
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).socket().close(ignored);
  }

  beast::tcp_stream stream_;
  Service& service_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::size_t header_fields_ = 0;  // the fields of the request's header (the rest are trailers)
  std::shared_ptr<http::response<http::string_body>> response_;
  std::shared_ptr<CancellationSource> source_;
  std::shared_ptr<std::array<char, 8192>> discard_;
  std::size_t discarded_ = 0;
  RequestInfo info_;
  std::string method_;
  std::string outcome_;
  Clock::time_point started_;
  std::size_t bytes_in_ = 0;
  bool keep_alive_ = true;
  bool working_ = false;
  bool client_gone_ = false;
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(net::io_context& ioc, tcp::acceptor acceptor, Service& service)
      : ioc_(ioc), acceptor_(std::move(acceptor)), service_(service) {}

  void Accept() {
    acceptor_.async_accept(net::make_strand(ioc_),
                           beast::bind_front_handler(&Listener::OnAccept, shared_from_this()));
  }
  void Stop() {
    net::post(acceptor_.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->acceptor_.close(ignored);
    });
  }

 private:
  void OnAccept(beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      if (service_.connections().load() >= service_.options().max_connections) {
        service_.metrics().CountRejected("too_many_connections");
        beast::error_code ignored;
        socket.close(ignored);
      } else {
        std::make_shared<Connection>(std::move(socket), service_)->Start();
      }
    }
    Accept();
  }

  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  Service& service_;
};

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  beast::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

int RunHttpService(std::shared_ptr<CodeActProvider> provider, Authenticator auth,
                   HttpServiceOptions options, int stop_fd) {
  if (!auth.enabled() && !IsLoopbackHost(options.host)) {
    std::cerr << "codeact serve: refusing to listen on " << options.host
              << " without credentials: give --token-file or --jwt-secret-file, or listen on "
                 "a loopback address\n";
    return 1;
  }
  beast::error_code ec;
  const std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
  const auto address = net::ip::make_address(host, ec);
  if (ec) {
    std::cerr << "codeact serve: --listen needs an IP address or localhost, got \"" << options.host
              << "\"\n";
    return 1;
  }
  auto ioc = std::make_unique<net::io_context>(std::max(1, options.io_threads));
  tcp::acceptor acceptor(net::make_strand(*ioc));
  const tcp::endpoint endpoint(address, options.port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    std::cerr << "codeact serve: cannot listen on " << options.host << ":" << options.port << ": "
              << ec.message() << "\n";
    return 1;
  }
  const auto bound = acceptor.local_endpoint();
  const int io_threads = std::max(1, options.io_threads);
  const auto grace = options.shutdown_grace;

  auto service =
      std::make_unique<Service>(std::move(provider), std::move(auth), std::move(options));
  auto listener = std::make_shared<Listener>(*ioc, std::move(acceptor), *service);
  listener->Accept();
  std::vector<std::thread> threads;
  for (int i = 0; i < io_threads; ++i) threads.emplace_back([&ioc] { ioc->run(); });
  const std::string shown = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                                    : bound.address().to_string();
  std::cout << "codeact serve: listening on http://" << shown << ":" << bound.port() << std::endl;
  service->log().info("listening on {}:{}", shown, bound.port());

  // Until a stop request. Without a stop pipe (no signal handling) it serves until killed.
  for (;;) {
    if (stop_fd < 0) {
      ::pause();
      continue;
    }
    pollfd p{stop_fd, POLLIN, 0};
    const int n = ::poll(&p, 1, -1);
    if (n > 0) break;
    if (n < 0 && errno != EINTR) break;
  }
  char drain[64];
  while (::read(stop_fd, drain, sizeof drain) > 0) {
  }
  service->log().info("stopping: no new connections; {} ms for the requests in flight",
                      grace.count());
  service->draining() = true;
  listener->Stop();
  if (!service->WaitIdle(Clock::now() + grace)) {
    service->log().warn("grace period over: cancelling the runs in flight");
    service->CancelAllRuns();
    // A cancelled run ends within its kill and drain (a fraction of a second); answering it
    // is bounded by the write timeout.
    (void)service->WaitIdle(Clock::now() + std::chrono::seconds(30));
  }
  ioc->stop();
  for (auto& t : threads) t.join();
  // The connections' handlers go with the io_context, before the service they point to.
  listener.reset();
  ioc.reset();
  service->Shutdown();
  service.reset();
  std::cout << std::flush;
  return 0;
}

}  // namespace codeact::internal
