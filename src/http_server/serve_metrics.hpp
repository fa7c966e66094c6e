// ServeMetrics: the counters `codeact serve` exposes on GET /metrics, and their Prometheus text
// exposition (format 0.0.4): runs by outcome, a run-duration histogram, tool calls, rejected
// requests by reason, HTTP responses by status, and the gauges the caller samples at render
// time (sessions, runs in flight and queued). Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace codeact::internal {

struct ServeGauges {
  std::int64_t sessions_open = 0;   // the provider's open sessions (REST, MCP and expired-not-yet)
  std::int64_t runs_in_flight = 0;  // runs the worker pool is executing
  std::int64_t runs_queued = 0;     // runs waiting for a worker
  std::int64_t worker_pool_size = 0;  // --max-concurrent
  std::int64_t queue_capacity = 0;    // --max-queued
  std::int64_t connections_open = 0;
};

class ServeMetrics {
 public:
  // Upper bounds of the duration histogram's buckets, in seconds (+Inf is implied).
  static constexpr std::array<double, 12> kDurationBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                              0.5,   1,    2.5,   5,    10,  30};

  ServeMetrics();

  void CountExecution(std::string_view outcome, double seconds, std::int64_t tool_calls);
  void CountRejected(std::string_view reason);
  void CountResponse(int status);

  std::string Render(const ServeGauges& gauges) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::int64_t, std::less<>> executions_;  // by outcome
  std::array<std::int64_t, kDurationBuckets.size()> buckets_{};  // not cumulative
  std::int64_t duration_count_ = 0;
  double duration_sum_ = 0;
  std::int64_t tool_calls_ = 0;
  std::map<std::string, std::int64_t, std::less<>> rejected_;  // by reason
  std::map<int, std::int64_t> responses_;                      // by status
};

}  // namespace codeact::internal
