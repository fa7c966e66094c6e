#include "os/resource_limits.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>

namespace codeact::internal {

void ResourceLimits::Set(int resource, std::int64_t soft, std::int64_t hard) {
  for (int i = 0; i < count_; ++i) {
    if (items_[i].resource == resource) {
      items_[i] = {resource, soft, hard};
      return;
    }
  }
  // A fixed-size table: a caller setting more distinct limits than exist is a bug.
  if (count_ == kMax) std::abort();
  items_[count_++] = {resource, soft, hard};
}

std::optional<Rlimit> ResourceLimits::Take(int resource) {
  for (int i = 0; i < count_; ++i) {
    if (items_[i].resource != resource) continue;
    const Rlimit taken = items_[i];
    std::copy(items_ + i + 1, items_ + count_, items_ + i);
    --count_;
    return taken;
  }
  return std::nullopt;
}

std::optional<Rlimit> ResourceLimits::Get(int resource) const {
  for (const Rlimit& l : *this) {
    if (l.resource == resource) return l;
  }
  return std::nullopt;
}

const char* RlimitName(int resource) {
  switch (resource) {
    case RLIMIT_CORE:
      return "RLIMIT_CORE";
    case RLIMIT_CPU:
      return "RLIMIT_CPU";
    case RLIMIT_FSIZE:
      return "RLIMIT_FSIZE";
    case RLIMIT_NOFILE:
      return "RLIMIT_NOFILE";
    case RLIMIT_NPROC:
      return "RLIMIT_NPROC";
    case RLIMIT_AS:
      return "RLIMIT_AS";
    case RLIMIT_SIGPENDING:
      return "RLIMIT_SIGPENDING";
    case RLIMIT_MSGQUEUE:
      return "RLIMIT_MSGQUEUE";
    default:
      return "RLIMIT_?";
  }
}

std::int64_t HostOpenFilesCeiling() {
  rlimit host{};
  if (::getrlimit(RLIMIT_NOFILE, &host) != 0 || host.rlim_max == RLIM_INFINITY) return INT64_MAX;
  return static_cast<std::int64_t>(host.rlim_max);
}

}  // namespace codeact::internal
