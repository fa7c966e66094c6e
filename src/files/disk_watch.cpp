#include "files/disk_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "common/kept_threads.hpp"
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

struct DiskWatch::State {
  std::vector<DiskBound> bounds;
  std::vector<TreeUsage> base;
  std::function<void(const std::string&)> on_limit;
  std::mutex mu;
  std::condition_variable changed;  // stop or walking changed
  bool stop = false;                // Stop() was called: no walk starts any more
  bool walking = false;             // the thread walks the trees, or calls on_limit
  bool stopped = false;             // Stop() has done its last walk
  std::string tripped;              // the first bound passed, by the thread or the last walk
};

namespace {

// One walk of every tree: the first bound passed, or "".
std::string Check(const std::vector<DiskBound>& bounds, const std::vector<TreeUsage>& base) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    auto now = MeasureTree(bounds[i].path);
    // The root is the host's (a mount's directory, the run's scratch): gone means removed under
    // the run, which no run can do to its own root; nothing is left to bound.
    if (!now.ok()) continue;
    if (std::string over = OverBound(bounds[i], base[i], *now); !over.empty()) return over;
  }
  return "";
}

// The threads the watches' loops run on: each loop gets a thread of its own, a kept one or one
// started for it (no bound); a few threads whose loop returned wait for the next.
KeptThreads& WatchThreads() {
  static auto* threads = new KeptThreads({.max_threads = 0, .max_idle = 4});
  return *threads;
}

}  // namespace

StatusOr<std::unique_ptr<DiskWatch>> DiskWatch::Start(
    std::vector<DiskBound> bounds, std::function<void(const std::string&)> on_limit) {
  auto state = std::make_shared<State>();
  for (const DiskBound& bound : bounds) {
    auto usage = MeasureTree(bound.path);
    if (!usage.ok()) return usage.status();
    state->base.push_back(*usage);
  }
  state->bounds = std::move(bounds);
  state->on_limit = std::move(on_limit);
  if (!state->bounds.empty()) {
    // Never a loop left waiting for a thread: it would walk a run that no longer waits for it.
    if (!WatchThreads().Run([state] { Loop(state); }, /*may_wait=*/false))
      return ResourceExhausted("disk watch: cannot start its thread");
  }
  return std::unique_ptr<DiskWatch>(new DiskWatch(std::move(state)));
}

DiskWatch::DiskWatch(std::shared_ptr<State> state) : state_(std::move(state)) {}

DiskWatch::~DiskWatch() { Stop(); }

void DiskWatch::Loop(const std::shared_ptr<State>& state) {
  State& s = *state;
  std::unique_lock lock(s.mu);
  // The base was measured just before, and a run stopped within the first interval gets its
  // check from Stop(): the first walk waits one interval.
  auto interval = kMinInterval;
  while (!s.changed.wait_for(lock, interval, [&s] { return s.stop; })) {
    s.walking = true;
    lock.unlock();
    const auto started = Clock::now();
    std::string over = Check(s.bounds, s.base);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    if (!over.empty()) {
      {
        std::lock_guard tripped_lock(s.mu);
        s.tripped = over;
      }
      s.on_limit(over);  // still walking: Stop() waits for it
    }
    lock.lock();
    s.walking = false;
    s.changed.notify_all();
    if (!over.empty()) return;
    // At most a third of a core for a large tree: the walk waits twice as long as it took.
    interval = std::max(kMinInterval, 2 * took);
  }
}

std::string DiskWatch::Stop() {
  State& s = *state_;
  std::unique_lock lock(s.mu);
  if (s.stopped) return s.tripped;
  s.stop = true;
  s.changed.notify_all();
  s.changed.wait(lock, [&s] { return !s.walking; });
  s.stopped = true;
  if (s.tripped.empty()) {
    lock.unlock();  // no walk of the thread's can start now
    std::string over = Check(s.bounds, s.base);
    lock.lock();
    s.tripped = std::move(over);
  }
  return s.tripped;
}

}  // namespace codeact::internal
