// ServeContext (serve_context.hpp): the HTTP service's shared state and bookkeeping.
#include "http_server/serve_context.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <csignal>
#include <ctime>
#include <optional>

#include "json/serialize.hpp"
#include "mcp_server/log_setup.hpp"
#include "mcp_server/mcp_revisions.hpp"

namespace codeact::internal {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

// The outcome of the run a worker thread is handling, for its access line.
thread_local std::string* current_outcome = nullptr;
// Where the work a worker thread is handling sends messages ahead of its reply.
thread_local const EventSink* current_events = nullptr;

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

std::shared_ptr<spdlog::logger> MakeAccessLogger(bool enabled) {
  // The access line is its own JSON object, one per line, whatever --log-format says.
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("codeact serve access", sink);
  logger->set_pattern("%v");
  logger->set_level(enabled ? spdlog::level::info : spdlog::level::off);
  logger->flush_on(spdlog::level::info);
  return logger;
}

}  // namespace

ServeContext::ServeContext(std::shared_ptr<CodeActProvider> provider, HttpServiceOptions options)
    : provider_(std::move(provider)),
      options_(std::move(options)),
      pool_(options_.max_concurrent, options_.max_queued),
      quotas_(options_.token_max_concurrent, options_.token_rate_per_s, options_.token_burst),
      ceilings_(provider_->Snapshot().limits),
      caller_sessions_(options_.sessions_per_caller),
      access_(MakeAccessLogger(options_.access_log)),
      log_(MakeStderrLogger("codeact serve", true)) {}

ServeContext::~ServeContext() = default;

void ServeContext::BeginRequest() {
  std::lock_guard lock(active_mu_);
  ++active_requests_;
}

void ServeContext::EndRequest() {
  std::lock_guard lock(active_mu_);
  --active_requests_;
  active_cv_.notify_all();
}

bool ServeContext::WaitIdle(Clock::time_point deadline) {
  std::unique_lock lock(active_mu_);
  return active_cv_.wait_until(lock, deadline, [&] { return active_requests_ == 0; });
}

std::shared_ptr<CancellationSource> ServeContext::TrackRun() {
  auto source = std::make_shared<CancellationSource>();
  std::lock_guard lock(runs_mu_);
  if (cancel_all_) source->Cancel("the server is shutting down");
  runs_.insert(source);
  return source;
}

void ServeContext::UntrackRun(const std::shared_ptr<CancellationSource>& source) {
  std::lock_guard lock(runs_mu_);
  runs_.erase(source);
}

void ServeContext::CancelAllRuns() {
  std::set<std::shared_ptr<CancellationSource>> runs;
  {
    std::lock_guard lock(runs_mu_);
    cancel_all_ = true;
    runs = runs_;
  }
  for (auto& s : runs) s->Cancel("the server is shutting down");
}

void ServeContext::Access(const RequestInfo& info, std::string_view method, int status,
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

Routed ServeContext::Refuse(Reply r) {
  metrics_.CountRejected(r.outcome);
  return {std::move(r)};
}

Routed ServeContext::BadRequest(const std::string& message) {
  return Refuse(ErrorReply(http::status::bad_request, "bad_request", message));
}

Reply ServeContext::RateRefusal(int wait_s) const {
  Reply r = ErrorReply(http::status::too_many_requests, "token_rate",
                       "this caller's rate is over the server's limit of " +
                           std::to_string(options_.token_rate_per_s) +
                           " per second (a request, or each run it asks for)");
  r.headers.emplace_back("Retry-After", std::to_string(wait_s));
  return r;
}

std::variant<json::object, Reply> ServeContext::BodyObject(const HttpRequest& req, bool empty_ok) {
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

std::variant<std::shared_ptr<void>, Reply> ServeContext::RunSlot(const CallerIdentity& caller) {
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

ExecutionResult ServeContext::Record(ExecutionResult result, const CallerIdentity& caller) {
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

ScopedRunOutcome::ScopedRunOutcome(std::string* outcome) { current_outcome = outcome; }
ScopedRunOutcome::~ScopedRunOutcome() { current_outcome = nullptr; }

ScopedEventSink::ScopedEventSink(const EventSink* sink) { current_events = sink; }
ScopedEventSink::~ScopedEventSink() { current_events = nullptr; }
const EventSink* CurrentEventSink() { return current_events; }

bool ServeContext::AllowsOrigin(std::string_view origin) const {
  return OriginAllowed(origin, options_.allowed_origins, IsLoopbackHost(options_.host));
}

}  // namespace codeact::internal
