#include "process/uid_lease.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace codeact::internal {
namespace {

constexpr const char* kLockDir = "/run/codeact/uids";

// The cross-process lock directory, root's only; empty when it cannot be made.
const std::string& LockDir() {
  static const std::string dir = [] {
    ::mkdir("/run/codeact", 0700);
    if (::mkdir(kLockDir, 0700) != 0 && errno != EEXIST) return std::string();
    struct stat st {};
    if (::lstat(kLockDir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      return std::string();
    return std::string(kLockDir);
  }();
  return dir;
}

}  // namespace

class UidTable {
 public:
  // Never destroyed: leases held by objects with static storage (a process-wide executor) are
  // released during exit, after a destroyed table would be gone.
  static UidTable& Get() {
    static UidTable* table = new UidTable;
    return *table;
  }

  StatusOr<UidLease> Acquire(const UidRangeSpec& range) {
    if (range.count == 0) return InvalidArgument("the run uid range is empty");
    std::lock_guard lock(mu_);
    for (std::uint32_t tried = 0; tried < range.count; ++tried) {
      const uid_t uid = range.first + (cursor_++ % range.count);
      if (in_use_.count(uid)) continue;
      int fd = -1;
      if (const std::string& dir = LockDir(); !dir.empty()) {
        fd = ::open((dir + "/" + std::to_string(uid)).c_str(),
                    O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {  // another codeact process holds it
          ::close(fd);
          continue;
        }
      }
      in_use_.insert(uid);
      UidLease lease(uid, fd);
      lease.held_ = true;
      return lease;
    }
    return ResourceExhausted("every uid of the run uid range " + std::to_string(range.first) + "+" +
                             std::to_string(range.count) + " is in use");
  }

  void Release(uid_t uid, int fd) {
    if (fd >= 0) ::close(fd);  // drops the flock
    std::lock_guard lock(mu_);
    in_use_.erase(uid);
  }

 private:
  std::mutex mu_;
  std::set<uid_t> in_use_;
  std::uint64_t cursor_ = static_cast<std::uint64_t>(::getpid()) * 7919;  // processes start apart
};

StatusOr<UidLease> UidLease::Acquire(const UidRangeSpec& range) {
  return UidTable::Get().Acquire(range);
}

UidLease::UidLease(UidLease&& other) noexcept
    : uid_(other.uid_),
      lock_fd_(std::exchange(other.lock_fd_, -1)),
      held_(std::exchange(other.held_, false)) {}

UidLease& UidLease::operator=(UidLease&& other) noexcept {
  if (this != &other) {
    Release();
    uid_ = other.uid_;
    lock_fd_ = std::exchange(other.lock_fd_, -1);
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

UidLease::~UidLease() { Release(); }

void UidLease::Release() {
  if (!held_) return;
  held_ = false;
  UidTable::Get().Release(uid_, std::exchange(lock_fd_, -1));
}

bool RunsNeedOwnUids() { return ::geteuid() == 0; }

}  // namespace codeact::internal
