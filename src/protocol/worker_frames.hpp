// Control frames between the host and the hyperlight worker (resources/hyperlight_worker.py):
// the worker's first frame ("ready" or "unavailable") and the "configure" exchange that precedes
// each run's request. The run itself then speaks the ordinary bridge protocol (host_loop.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codeact/egress_target.hpp"
#include "codeact/status.hpp"

namespace codeact::internal {

// What the worker needs to find or build the sandbox of a run.
struct WorkerConfig {
  std::string fingerprint;                         // one warm sandbox per fingerprint
  std::vector<std::string> tools;                  // registered as forwarding callbacks
  std::string input_dir;                           // empty: no /input
  std::string output_dir;                          // the host directory behind /output
  std::vector<EgressTarget> network_targets;       // sent as the URL the SDK parses + methods
  std::map<std::string, std::string> environment;  // os.environ inside the guest
  std::int64_t cpu_time_s = 0;                     // the worker's RLIMIT_CPU budget for each run
  // The guest's memory, in the SDK's size syntax ("123Ki"): memory_bytes split in two.
  std::string heap_size;
  std::string stack_size;
  // The worker's RLIMIT_FSIZE while the guest runs (it writes /output's files); sandbox builds
  // run under the worker's higher hard limit, since they write the guest's .aot to the cache.
  std::int64_t max_file_size_bytes = 0;
};

std::string EncodeConfigureFrame(const WorkerConfig& config);

struct WorkerReply {
  std::string type;     // "ready", "configured", "unavailable", or whatever the worker sent
  std::string message;  // for "unavailable"
};

// Reads exactly one frame from the worker (untrusted) before `deadline`. DEADLINE_EXCEEDED when
// none came in time; UNAVAILABLE when the worker closed the bridge (it exited); INVALID_ARGUMENT
// for a malformed frame, one over `max_frame_bytes`, or bytes after the frame.
StatusOr<WorkerReply> ReadWorkerReply(int from_worker_fd,
                                      std::chrono::steady_clock::time_point deadline,
                                      std::int64_t max_frame_bytes);

}  // namespace codeact::internal
