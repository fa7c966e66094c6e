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

#include "codeact/status.hpp"

namespace codeact::internal {

// What the worker needs to find or build the sandbox of a run.
struct WorkerConfig {
  std::string fingerprint;                         // one warm sandbox per fingerprint
  std::vector<std::string> tools;                  // registered as forwarding callbacks
  std::string input_dir;                           // empty: no /input
  std::string output_dir;                          // the host directory behind /output
  std::vector<std::string> network_targets;        // "HOST" or "HOST:METHOD,METHOD" (see below)
  std::map<std::string, std::string> environment;  // os.environ inside the guest
  std::int64_t cpu_time_s = 0;                     // the worker's RLIMIT_CPU budget for each run
};

// A network target "HOST[:METHODS]": METHODS is the part after the last ':' when it is a
// comma-separated list of letters ("GET,POST"); "https://x.com:8443" has none.
struct NetworkTarget {
  std::string target;
  std::vector<std::string> methods;  // empty: all methods
};
NetworkTarget ParseNetworkTarget(const std::string& text);

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
