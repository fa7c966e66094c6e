// The limit table: one row per field of ExecutionLimits, saying what the field means, what
// enforces it and how a user sets it. Everything that lists limits walks this table — the checks
// before a run, the config fingerprint and the warm pool's start keys, the child's rlimits, the
// CLI flags and the description the model reads — so a new limit is a field in
// include/codeact/limits.hpp and a row in limit_table.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codeact/limits.hpp"
#include "codeact/status.hpp"
#include "os/resource_limits.hpp"

namespace codeact::internal {

enum class LimitEnforcer {
  kRlimit,  // a setrlimit in the child before exec (and, where noted, a cgroup as well)
  kHost,    // the host: its watchdog, pipe readers, bridge or file capture
};

struct LimitSpec {
  std::string_view name;  // the field's name, also its JSON key
  std::int64_t ExecutionLimits::*member;
  std::string_view unit;  // "ms", "s", "bytes", "files", "processes", "calls"
  std::int64_t minimum;   // the smallest value a run can start under
  LimitEnforcer enforcer;
  int rlimit;  // RLIMIT_* for kRlimit rows, else -1
  // Part of what a started child depends on: runs under different values never share a warm
  // child (the rlimits, and the sizes the sandbox is built with).
  bool shapes_child;
  std::string_view flag;   // the CLI flag, empty when there is none
  double flag_scale;       // flag value x scale = field value (--timeout 1.5 -> 1500 ms)
  std::string_view help;   // one line for --help and docs/limits.md
  std::string_view model;  // how the description names it for the model; empty: not mentioned
  // Sent in the child's request frame and enforced by the runner as well (resources/runner.py):
  // a request without the field gets the field's default, the row's ExecutionLimits default
  // (RequestDefaults).
  bool in_child_request = false;
};

std::span<const LimitSpec> LimitTable();

// The defaults of the rows that are in_child_request, as (name, value) in table order: what the
// runner assumes for a request without them (resources/codeact_protocol.py REQUEST_DEFAULTS,
// which the protocol agreement test holds to these).
std::vector<std::pair<std::string_view, std::int64_t>> RequestDefaults();

// Every limit at least its minimum.
Status CheckLimits(const ExecutionLimits& limits);

// The values as a canonical text (length-prefixed, in table order): all of them, or only those
// that shape a child. Keys of the config fingerprint and the warm pool.
std::string LimitKey(const ExecutionLimits& limits, bool child_only);

// Queued signals a run may have pending (RLIMIT_SIGPENDING): the user's default is thousands.
inline constexpr std::int64_t kRunPendingSignals = 64;

// The child's rlimits: RLIMIT_CORE 0, RLIMIT_SIGPENDING kRunPendingSignals, RLIMIT_MSGQUEUE 0,
// then every kRlimit row (RLIMIT_CPU with a hard limit one
// second above the soft one, so SIGXCPU comes first), RLIMIT_AS last.
ResourceLimits RlimitsFor(const ExecutionLimits& limits);

// Whether `value` of `spec` differs from the default: a limit the caller set on purpose. Where a
// host cannot enforce a limit, a default one degrades with a note and an explicit one is refused.
bool IsExplicit(const LimitSpec& spec, const ExecutionLimits& limits);

// "Limits: 30 s wall clock (tool calls included), 30 s CPU, ..." for the description.
std::string LimitsForModel(const ExecutionLimits& limits);

// "1 MiB", "30 s", "256 calls": a value with its unit, for messages and the description.
std::string LimitText(const LimitSpec& spec, std::int64_t value);
// "256 MiB", "4 KiB", "100 bytes".
std::string BytesText(std::int64_t n);
const LimitSpec& LimitNamed(std::string_view name);

}  // namespace codeact::internal
