#include "http_server/serve_metrics.hpp"

#include <cstdio>

#include "codeact/execution.hpp"

namespace codeact::internal {
namespace {

std::string Number(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

void Header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void Gauge(std::string& out, std::string_view name, std::string_view help, std::int64_t value) {
  Header(out, name, "gauge", help);
  out.append(name).append(" ").append(std::to_string(value)).append("\n");
}

}  // namespace

ServeMetrics::ServeMetrics() {
  // Every outcome is listed from the start, so a dashboard sees zeros rather than no series.
  for (int o = static_cast<int>(Outcome::kOk); o <= static_cast<int>(Outcome::kInternalError);
       ++o) {
    executions_[std::string(OutcomeName(static_cast<Outcome>(o)))] = 0;
  }
}

void ServeMetrics::CountExecution(std::string_view outcome, double seconds,
                                  std::int64_t tool_calls) {
  std::lock_guard lock(mu_);
  auto it = executions_.find(outcome);
  if (it == executions_.end()) it = executions_.emplace(std::string(outcome), 0).first;
  ++it->second;
  for (std::size_t i = 0; i < kDurationBuckets.size(); ++i) {
    if (seconds <= kDurationBuckets[i]) {
      ++buckets_[i];
      break;
    }
  }
  ++duration_count_;
  duration_sum_ += seconds;
  tool_calls_ += tool_calls;
}

void ServeMetrics::CountRejected(std::string_view reason) {
  std::lock_guard lock(mu_);
  auto it = rejected_.find(reason);
  if (it == rejected_.end()) it = rejected_.emplace(std::string(reason), 0).first;
  ++it->second;
}

void ServeMetrics::CountResponse(int status) {
  std::lock_guard lock(mu_);
  ++responses_[status];
}

std::string ServeMetrics::Render(const ServeGauges& g) const {
  std::lock_guard lock(mu_);
  std::string out;
  Header(out, "codeact_executions_total", "counter", "Runs of code, by outcome.");
  for (const auto& [outcome, n] : executions_) {
    out += "codeact_executions_total{outcome=\"" + outcome + "\"} " + std::to_string(n) + "\n";
  }
  Header(out, "codeact_execution_duration_seconds", "histogram",
         "Wall-clock duration of runs, queueing excluded.");
  std::int64_t cumulative = 0;
  for (std::size_t i = 0; i < kDurationBuckets.size(); ++i) {
    cumulative += buckets_[i];
    out += "codeact_execution_duration_seconds_bucket{le=\"" + Number(kDurationBuckets[i]) +
           "\"} " + std::to_string(cumulative) + "\n";
  }
  out += "codeact_execution_duration_seconds_bucket{le=\"+Inf\"} " +
         std::to_string(duration_count_) + "\n";
  out += "codeact_execution_duration_seconds_sum " + Number(duration_sum_) + "\n";
  out += "codeact_execution_duration_seconds_count " + std::to_string(duration_count_) + "\n";
  Header(out, "codeact_tool_calls_total", "counter", "Host tool calls made by runs.");
  out += "codeact_tool_calls_total " + std::to_string(tool_calls_) + "\n";
  Header(out, "codeact_rejected_requests_total", "counter",
         "Requests refused before any work, by reason.");
  for (const auto& [reason, n] : rejected_) {
    out += "codeact_rejected_requests_total{reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
  }
  Header(out, "codeact_http_responses_total", "counter", "HTTP responses, by status code.");
  for (const auto& [status, n] : responses_) {
    out += "codeact_http_responses_total{status=\"" + std::to_string(status) + "\"} " +
           std::to_string(n) + "\n";
  }
  Gauge(out, "codeact_sessions_open", "Sessions open in the provider.", g.sessions_open);
  Gauge(out, "codeact_runs_in_flight", "Runs executing now.", g.runs_in_flight);
  Gauge(out, "codeact_runs_queued", "Runs waiting for a worker.", g.runs_queued);
  Gauge(out, "codeact_worker_pool_size", "Runs that may execute at once (--max-concurrent).",
        g.worker_pool_size);
  Gauge(out, "codeact_queue_capacity", "Runs that may wait (--max-queued).", g.queue_capacity);
  Gauge(out, "codeact_http_connections_open", "Open HTTP connections.", g.connections_open);
  return out;
}

}  // namespace codeact::internal
