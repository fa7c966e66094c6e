// RuntimeGuardSpec: what the runner's runtime guard (src/guard) lets the user's code reach,
// named as the child sees it, and its form on the bridge. The request frame carries all of it
// in its "guard" field; a pooled child gets the system part earlier, in a "guard" frame before
// its "ready", so that it arms the OS layers while it waits, with the imports of the latest run
// of its start key when there was one: a request whose spec is that frame's then says "armed"
// instead (protocol/protocol.hpp names the fields).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace codeact::internal {

struct RuntimeGuardSpec {
  // Landlock (where the kernel has it): read, list and execute beneath `exec`; read and list
  // beneath `read`; read and write beneath `write`. Everything else is out of reach, /proc too.
  std::vector<std::string> exec;
  std::vector<std::string> read;
  std::vector<std::string> write;
  std::string tmp;              // TMPDIR for the code (the process level); empty: unchanged
  std::vector<int> bridge_fds;  // the audit hook refuses to open these
  // The import patterns for the user's code (validator/runtime_policy.py); not in the system part.
  std::vector<std::string> imports;
  // The audit hook refuses a thread start beyond this many threads (the run's max_processes);
  // 0: no cap.
  std::int64_t max_threads = 0;

  bool operator==(const RuntimeGuardSpec&) const = default;
};

// {"exec":[...],"read":[...],"write":[...],"tmp":"...","bridge_fds":[...],"max_threads":N}
// ("tmp" and "max_threads" when set).
boost::json::object GuardSystemJson(const RuntimeGuardSpec& spec);
// The request's "guard" field: the system part and "imports".
boost::json::object GuardRequestJson(const RuntimeGuardSpec& spec);

}  // namespace codeact::internal
