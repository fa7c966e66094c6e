// ServeContext: what the HTTP service's routes and connections share — the provider, the
// options, the worker pool, the per-caller quotas and session caps, the metrics and the logs —
// and the bookkeeping around them: requests and runs in flight (drained and cancelled at
// shutdown), the access line of each response, and the refusals every route gives alike (rate,
// run slot, bad JSON body). The routes themselves live in rest_routes.hpp (REST) and
// mcp_http.hpp (MCP Streamable HTTP); connections in http_connection.hpp. Thread-safe.
//
// Internal (codeact::internal); Boost.Beast stays inside src/http_server.
#pragma once

#include <atomic>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "codeact/cancellation.hpp"
#include "codeact/execution.hpp"
#include "codeact/limits.hpp"
#include "codeact/provider.hpp"
#include "http_server/auth.hpp"
#include "http_server/caller_quotas.hpp"
#include "http_server/caller_sessions.hpp"
#include "http_server/http_reply.hpp"
#include "http_server/http_service.hpp"
#include "http_server/serve_metrics.hpp"
#include "http_server/work_pool.hpp"

namespace spdlog {
class logger;
}

namespace codeact::internal {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

class ServeContext {
 public:
  using Clock = std::chrono::steady_clock;

  ServeContext(std::shared_ptr<CodeActProvider> provider, HttpServiceOptions options);
  ~ServeContext();
  ServeContext(const ServeContext&) = delete;
  ServeContext& operator=(const ServeContext&) = delete;

  const HttpServiceOptions& options() const { return options_; }
  const std::shared_ptr<CodeActProvider>& provider() const { return provider_; }
  // The server's limits: a request may ask for less, never more.
  const ExecutionLimits& ceilings() const { return ceilings_; }
  ServeMetrics& metrics() { return metrics_; }
  CallerQuotas& quotas() { return quotas_; }
  CallerSessions& caller_sessions() { return caller_sessions_; }
  const WorkPool& pool() const { return pool_; }
  std::atomic<int>& connections() { return connections_; }
  std::atomic<bool>& draining() { return draining_; }
  spdlog::logger& log() { return *log_; }

  // Requests between their read and the end of their reply's write (drained at shutdown).
  void BeginRequest();
  void EndRequest();
  // Waits until no request is in flight or `deadline`; true when none is.
  bool WaitIdle(Clock::time_point deadline);

  // The cancellation source of each run in flight, cancelled together at the end of the grace.
  std::shared_ptr<CancellationSource> TrackRun();
  void UntrackRun(const std::shared_ptr<CancellationSource>& source);
  void CancelAllRuns();

  bool Submit(std::function<void()> task) { return pool_.TrySubmit(std::move(task)); }
  // Runs what is queued, then joins the workers (the first step of the service's shutdown).
  void StopPool() { pool_.Stop(); }

  // Counts the response and writes its access line.
  void Access(const RequestInfo& info, std::string_view method, int status,
              std::string_view outcome, Clock::duration took, std::size_t bytes_in,
              std::size_t bytes_out);

  // A refusal: counted under its reason, answered now.
  Routed Refuse(Reply r);
  Routed BadRequest(const std::string& message);
  // 429 for a caller over its request rate, retry after `wait_s`.
  Reply RateRefusal(int wait_s) const;
  // The request's JSON object body, or a 400 reply.
  std::variant<boost::json::object, Reply> BodyObject(const HttpRequest& req, bool empty_ok);
  // Reserves the caller's run slot, or the 429 that says it is taken.
  std::variant<std::shared_ptr<void>, Reply> RunSlot(const CallerIdentity& caller);

  // The Origin policy (mcp_server/mcp_revisions.hpp OriginAllowed): --allow-origin, and
  // loopback origins on a loopback listener.
  bool AllowsOrigin(std::string_view origin) const;

  // One run through the pool, with its metrics and its security line.
  ExecutionResult Record(ExecutionResult result, const CallerIdentity& caller);

 private:
  const std::shared_ptr<CodeActProvider> provider_;
  const HttpServiceOptions options_;
  ServeMetrics metrics_;
  WorkPool pool_;
  CallerQuotas quotas_;
  const ExecutionLimits ceilings_;
  CallerSessions caller_sessions_;
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

// While one lives on a worker thread, ServeContext::Record on that thread writes the run's
// outcome to `*outcome`, for the access line (an MCP tools/call reports its result through the
// execute callback, which runs inline on that thread).
class ScopedRunOutcome {
 public:
  explicit ScopedRunOutcome(std::string* outcome);
  ~ScopedRunOutcome();
  ScopedRunOutcome(const ScopedRunOutcome&) = delete;
  ScopedRunOutcome& operator=(const ScopedRunOutcome&) = delete;
};

// Where the work a worker thread is handling may send messages ahead of its reply: while one
// lives on that thread, CurrentEventSink() returns `sink` (else nullptr). The connection turns
// its response into an SSE stream at the first message (MCP progress on /mcp, the output of a
// streamed /v1/execute). A message that starts with "event: " is a whole SSE event; any other is
// the data of an "event: message".
using EventSink = std::function<void(const std::string&)>;
class ScopedEventSink {
 public:
  explicit ScopedEventSink(const EventSink* sink);
  ~ScopedEventSink();
  ScopedEventSink(const ScopedEventSink&) = delete;
  ScopedEventSink& operator=(const ScopedEventSink&) = delete;
};
const EventSink* CurrentEventSink();

}  // namespace codeact::internal
