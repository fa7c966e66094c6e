#include "files/disk_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/errno_status.hpp"

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

std::string Bytes(std::int64_t n) {
  if (n >= (1LL << 20) && n % (1LL << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n >= (1LL << 20))
    return std::to_string(n >> 20) + "." + std::to_string(((n % (1LL << 20)) * 10) >> 20) + " MiB";
  if (n >= (1LL << 10)) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

// One open directory of the walk.
struct Level {
  DIR* dir = nullptr;
  int depth = 0;
};

}  // namespace

StatusOr<TreeUsage> MeasureTree(const std::string& path) {
  const int root = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root < 0) return ErrnoStatus("disk watch: open " + path, errno);
  struct stat root_st {};
  if (::fstat(root, &root_st) != 0) {
    const int e = errno;
    ::close(root);
    return ErrnoStatus("disk watch: stat " + path, e);
  }
  DIR* root_dir = ::fdopendir(root);
  if (root_dir == nullptr) {
    const int e = errno;
    ::close(root);
    return ErrnoStatus("disk watch: read " + path, e);
  }
  TreeUsage usage;
  std::vector<Level> stack{{root_dir, 0}};
  while (!stack.empty()) {
    Level& level = stack.back();
    errno = 0;
    const dirent* entry = ::readdir(level.dir);
    if (entry == nullptr) {
      ::closedir(level.dir);
      stack.pop_back();
      continue;
    }
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    const int dir_fd = ::dirfd(level.dir);
    struct stat st {};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    ++usage.files;
    usage.bytes += static_cast<std::int64_t>(st.st_blocks) * 512;
    if (!S_ISDIR(st.st_mode) || st.st_dev != root_st.st_dev) continue;
    if (level.depth + 1 >= kMaxWatchDepth) {
      ++usage.unread_dirs;
      continue;
    }
    const int sub = ::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
      if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) ++usage.unread_dirs;
      continue;
    }
    DIR* sub_dir = ::fdopendir(sub);
    if (sub_dir == nullptr) {
      ::close(sub);
      ++usage.unread_dirs;
      continue;
    }
    const int depth = level.depth + 1;  // `level` dangles once the stack grows
    stack.push_back({sub_dir, depth});
  }
  return usage;
}

std::string OverBound(const DiskBound& bound, const TreeUsage& base, const TreeUsage& now) {
  const std::int64_t bytes = now.bytes - base.bytes;
  const std::int64_t files = now.files - base.files;
  if (bytes > bound.max_bytes) {
    return "disk limit: " + bound.name + " grew by " + Bytes(bytes) + ", over its bound of " +
           Bytes(bound.max_bytes);
  }
  if (files > bound.max_files) {
    return "disk limit: " + bound.name + " grew by " + std::to_string(files) +
           " files, over its bound of " + std::to_string(bound.max_files);
  }
  if (now.unread_dirs > base.unread_dirs) {
    return "disk limit: " + bound.name +
           " holds a directory the disk watch cannot read or is deeper than " +
           std::to_string(kMaxWatchDepth) + " levels, so its size cannot be bounded";
  }
  return "";
}

StatusOr<std::unique_ptr<DiskWatch>> DiskWatch::Start(
    std::vector<DiskBound> bounds, std::function<void(const std::string&)> on_limit) {
  std::vector<TreeUsage> base;
  for (const DiskBound& bound : bounds) {
    auto usage = MeasureTree(bound.path);
    if (!usage.ok()) return usage.status();
    base.push_back(*usage);
  }
  auto watch = std::unique_ptr<DiskWatch>(
      new DiskWatch(std::move(bounds), std::move(base), std::move(on_limit)));
  if (!watch->bounds_.empty()) watch->thread_ = std::thread([w = watch.get()] { w->Loop(); });
  return watch;
}

DiskWatch::DiskWatch(std::vector<DiskBound> bounds, std::vector<TreeUsage> base,
                     std::function<void(const std::string&)> on_limit)
    : bounds_(std::move(bounds)), base_(std::move(base)), on_limit_(std::move(on_limit)) {}

DiskWatch::~DiskWatch() { Stop(); }

std::string DiskWatch::Check() const {
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    auto now = MeasureTree(bounds_[i].path);
    // The root is the host's (a mount's directory, the run's scratch): gone means removed under
    // the run, which no run can do to its own root; nothing is left to bound.
    if (!now.ok()) continue;
    if (std::string over = OverBound(bounds_[i], base_[i], *now); !over.empty()) return over;
  }
  return "";
}

void DiskWatch::Loop() {
  std::unique_lock lock(mu_);
  // The base was measured just before this thread started, and a run stopped within the first
  // interval gets its check from Stop(): the first walk waits one interval.
  auto interval = kMinInterval;
  while (!wake_.wait_for(lock, interval, [this] { return stop_; })) {
    lock.unlock();
    const auto started = Clock::now();
    std::string over = Check();
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    lock.lock();
    if (!over.empty()) {
      tripped_ = over;
      lock.unlock();
      on_limit_(over);
      return;
    }
    // At most a third of a core for a large tree: the walk waits twice as long as it took.
    interval = std::max(kMinInterval, 2 * took);
  }
}

std::string DiskWatch::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return tripped_;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  stopped_ = true;
  if (tripped_.empty()) tripped_ = Check();
  return tripped_;
}

}  // namespace codeact::internal
