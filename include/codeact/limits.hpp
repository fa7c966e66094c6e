// ExecutionLimits: every limit a run is held to, with safe defaults and units in the names.
// A backend that cannot enforce a configured limit refuses the run (setup_error); it never
// ignores one silently (where no cgroup can be made, an explicit memory or process limit is
// refused and a default one degrades with a note in the result's message). Zero is not
// "unlimited": use the documented maxima instead.
// What enforces each limit, its bounds and its CLI flag are listed once, in the library's limit
// table (src/limits/limit_table.cpp); a new limit is a field here and a row there.
#pragma once

#include <cstdint>

namespace codeact {

struct ExecutionLimits {
  std::int64_t wall_timeout_ms = 30'000;  // host watchdog, tool calls included
  std::int64_t cpu_time_s = 30;           // RLIMIT_CPU
  std::int64_t memory_bytes = 1LL << 30;  // the run's memory cgroup (swap off), and RLIMIT_AS
  std::int64_t max_file_size_bytes = 64LL << 20;  // RLIMIT_FSIZE
  std::int64_t max_open_files = 256;              // RLIMIT_NOFILE
  std::int64_t max_processes = 32;                // the run's pids cgroup, and RLIMIT_NPROC
  std::int64_t max_workdir_bytes = 256LL << 20;   // the working directory (a sized tmpfs)
  std::int64_t max_stdout_bytes = 1LL << 20;      // host pipe reader, byte-accurate
  std::int64_t max_stderr_bytes = 1LL << 20;
  std::int64_t max_output_bytes = 1LL << 20;          // JSON of the final expression value
  std::int64_t max_frame_bytes = 1LL << 20;           // one bridge frame
  std::int64_t max_tool_calls = 256;                  // per run
  std::int64_t max_capture_file_bytes = 1LL << 20;    // one captured file
  std::int64_t max_capture_total_bytes = 10LL << 20;  // all captured files of a run
  std::int64_t max_capture_files = 1000;              // captured files of a run
  // The serialised result JSON as a whole (files, output, streams, everything): files are omitted
  // first (largest first), then stdout/stderr are cut and the final value dropped.
  std::int64_t max_result_bytes = 16LL << 20;
};

}  // namespace codeact
