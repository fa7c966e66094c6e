#include "limits/limit_table.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>

namespace codeact::internal {
namespace {

using L = ExecutionLimits;
constexpr auto kRl = LimitEnforcer::kRlimit;
constexpr auto kHost = LimitEnforcer::kHost;

// name, member, unit, minimum, enforcer, rlimit, shapes_child, flag, flag scale, help, model,
// in_child_request.
constexpr LimitSpec kTable[] = {
    {"wall_timeout_ms", &L::wall_timeout_ms, "ms", 1, kHost, -1, false, "--timeout", 1000.0,
     "wall-clock limit in seconds, tool calls included", "wall clock (tool calls included)"},
    {"cpu_time_s", &L::cpu_time_s, "s", 1, kRl, RLIMIT_CPU, true, "--cpu", 1.0,
     "CPU-time limit in seconds", "CPU"},
    {"memory_bytes", &L::memory_bytes, "bytes", 64LL << 20, kRl, RLIMIT_AS, true, "--memory-mb",
     1024.0 * 1024.0,
     "memory limit in MiB (the run's memory cgroup, and each process's address space)", "memory"},
    {"max_file_size_bytes", &L::max_file_size_bytes, "bytes", 1, kRl, RLIMIT_FSIZE, true,
     "--max-file-size-bytes", 1.0, "largest file the code may write", ""},
    {"max_open_files", &L::max_open_files, "files", 16, kRl, RLIMIT_NOFILE, true,
     "--max-open-files", 1.0, "open file descriptors", ""},
    {"max_processes", &L::max_processes, "processes", 1, kRl, RLIMIT_NPROC, true, "--max-processes",
     1.0, "processes (the run's pids cgroup, and RLIMIT_NPROC where it applies)", ""},
    {"max_workdir_bytes", &L::max_workdir_bytes, "bytes", 1LL << 20, kHost, -1, true,
     "--max-workdir-mb", 1024.0 * 1024.0, "size of the working directory in MiB",
     "working directory"},
    {"max_stdout_bytes", &L::max_stdout_bytes, "bytes", 1, kHost, -1, false, "--max-stdout-bytes",
     1.0, "stdout cap", "stdout (truncated past that)"},
    {"max_stderr_bytes", &L::max_stderr_bytes, "bytes", 1, kHost, -1, false, "--max-stderr-bytes",
     1.0, "stderr cap", "stderr (truncated past that)"},
    {"max_output_bytes", &L::max_output_bytes, "bytes", 1, kHost, -1, false, "--max-output-bytes",
     1.0, "JSON size of the final expression's value", "final value (as JSON)", true},
    {"max_frame_bytes", &L::max_frame_bytes, "bytes", 1, kHost, -1, false, "--max-frame-bytes", 1.0,
     "one bridge frame (a tool call or its answer)", "", true},
    {"max_tool_calls", &L::max_tool_calls, "calls", 1, kHost, -1, false, "--max-tool-calls", 1.0,
     "tool calls per run", "tool calls", true},
    {"max_capture_file_bytes", &L::max_capture_file_bytes, "bytes", 1, kHost, -1, false,
     "--max-capture-file-bytes", 1.0, "largest captured file", ""},
    {"max_capture_total_bytes", &L::max_capture_total_bytes, "bytes", 1, kHost, -1, false,
     "--max-capture-total-bytes", 1.0, "all captured files of a run", ""},
    {"max_capture_files", &L::max_capture_files, "files", 1, kHost, -1, false,
     "--max-capture-files", 1.0, "captured files of a run (more are listed as omitted)", ""},
    // The smallest size leaves room for a result's fixed fields and the notes the fitting adds.
    {"max_result_bytes", &L::max_result_bytes, "bytes", 64LL << 10, kHost, -1, false,
     "--max-result-bytes", 1.0,
     "size of the result JSON as a whole (files omitted first, then output cut)", ""},
};

void AddField(std::string& key, std::string_view v) {
  key += std::to_string(v.size());
  key += ':';
  key += v;
}

}  // namespace

std::span<const LimitSpec> LimitTable() { return kTable; }

std::vector<std::pair<std::string_view, std::int64_t>> RequestDefaults() {
  const ExecutionLimits defaults;
  std::vector<std::pair<std::string_view, std::int64_t>> out;
  for (const LimitSpec& spec : kTable) {
    if (spec.in_child_request) out.emplace_back(spec.name, defaults.*spec.member);
  }
  return out;
}

const LimitSpec& LimitNamed(std::string_view name) {
  for (const LimitSpec& spec : kTable) {
    if (spec.name == name) return spec;
  }
  std::abort();  // a name that is not in the table is a bug in the caller
}

Status CheckLimits(const ExecutionLimits& limits) {
  for (const LimitSpec& spec : kTable) {
    const std::int64_t value = limits.*spec.member;
    if (value < spec.minimum) {
      return InvalidArgument("limit " + std::string(spec.name) + " must be at least " +
                             LimitText(spec, spec.minimum) + ", got " + std::to_string(value));
    }
  }
  return Status::Ok();
}

std::string LimitKey(const ExecutionLimits& limits, bool child_only) {
  std::string key;
  for (const LimitSpec& spec : kTable) {
    if (child_only && !spec.shapes_child) continue;
    AddField(key, spec.name);
    AddField(key, std::to_string(limits.*spec.member));
  }
  return key;
}

ResourceLimits RlimitsFor(const ExecutionLimits& limits) {
  ResourceLimits r;
  r.Set(RLIMIT_CORE, 0, 0);
  // Counted per user, which a non-root process level shares with the host user:
  // queued signals (the child may signal only itself) and POSIX message queue bytes (the guard
  // refuses mq_open; this holds where it is off).
  r.Set(RLIMIT_SIGPENDING, kRunPendingSignals, kRunPendingSignals);
  r.Set(RLIMIT_MSGQUEUE, 0, 0);
  for (const LimitSpec& spec : kTable) {
    if (spec.enforcer != LimitEnforcer::kRlimit || spec.rlimit == RLIMIT_AS) continue;
    std::int64_t v = limits.*spec.member;
    // More open files than the host's hard limit cannot be granted: the child gets the hard limit
    // and the result says so (run_outcome.hpp, OpenFilesNote) rather than every start failing.
    if (spec.rlimit == RLIMIT_NOFILE) v = std::min(v, HostOpenFilesCeiling());
    r.Set(spec.rlimit, v, spec.rlimit == RLIMIT_CPU ? v + 1 : v);
  }
  r.Set(RLIMIT_AS, limits.memory_bytes, limits.memory_bytes);
  return r;
}

bool IsExplicit(const LimitSpec& spec, const ExecutionLimits& limits) {
  static const ExecutionLimits defaults;
  return limits.*spec.member != defaults.*spec.member;
}

std::string LimitsForModel(const ExecutionLimits& limits) {
  std::string out;
  for (const LimitSpec& spec : kTable) {
    if (spec.model.empty()) continue;
    out += out.empty() ? "Limits: " : ", ";
    const std::int64_t v = limits.*spec.member;
    out += spec.unit == "calls" ? std::to_string(v) : LimitText(spec, v);
    out += " ";
    out += spec.model;
  }
  return out + ".";
}

std::string BytesText(std::int64_t n) {
  if (n % (1LL << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n % (1LL << 10) == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

std::string LimitText(const LimitSpec& spec, std::int64_t n) {
  if (spec.unit == "bytes") return BytesText(n);
  if (spec.unit == "ms")
    return n % 1000 == 0 ? std::to_string(n / 1000) + " s" : std::to_string(n) + " ms";
  return std::to_string(n) + " " + std::string(spec.unit);
}

}  // namespace codeact::internal
