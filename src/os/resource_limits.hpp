// ResourceLimits: the rlimits a child gets before exec, as a bounded value the child copies before
// fork; RlimitName for messages, and the host's own RLIMIT_NOFILE ceiling.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <optional>

namespace codeact::internal {

// One rlimit a child gets before exec.
struct Rlimit {
  int resource = -1;  // RLIMIT_*
  std::int64_t soft = 0;
  std::int64_t hard = 0;
};

// The rlimits of a child, applied in the order they were set (the caller puts RLIMIT_AS last, so
// the earlier steps never run short of address space). Bounded: the child copies them into a
// fixed array before fork. Empty: the child inherits the host's limits (RLIMIT_CORE is always 0).
class ResourceLimits {
 public:
  static constexpr int kMax = 10;
  // Sets one limit, replacing an earlier value of the same resource in place.
  void Set(int resource, std::int64_t soft, std::int64_t hard);
  std::optional<Rlimit> Get(int resource) const;
  // Removes one limit and returns it (nullopt where it was not set).
  std::optional<Rlimit> Take(int resource);
  const Rlimit* begin() const { return items_; }
  const Rlimit* end() const { return items_ + count_; }
  int size() const { return count_; }

 private:
  Rlimit items_[kMax];
  int count_ = 0;
};

// "RLIMIT_NOFILE" for messages.
const char* RlimitName(int resource);

// The host's hard RLIMIT_NOFILE: the most open files a child can be given without privileges
// (CAP_SYS_RESOURCE). Child::Start applies a limit as given, or fails; the executors lower
// max_open_files to this first and say so in the result (run_outcome.hpp, OpenFilesNote).
std::int64_t HostOpenFilesCeiling();

}  // namespace codeact::internal
