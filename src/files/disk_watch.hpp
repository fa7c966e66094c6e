// DiskWatch: the host-side bound on what a run writes into trees the kernel does not size for
// it (a read-write mount's host directory, the process level's private $TMPDIR and working
// directory on the host's disk). A thread walks each tree (lstat only, no link followed, no other
// file system entered) and sums its allocated bytes (st_blocks * 512) and its entries; when what
// the run added since the watch started passes a tree's bound, it calls `on_limit` once with a
// message naming the tree and the bound, and the caller ends the run.
//
// Each watch has a thread of its own while it runs, so a large tree never delays the walks of
// another run's. The threads are kept when their watch stops and serve the next one (a few stay
// idle, the others end), so a run neither starts nor joins a thread: a thread's start was ~0.1-
// 0.2 ms of the run's setup, and its join waited behind the child's exit on the same CPU.
//
// Overshoot: the watch cannot refuse a write, only end the run after it. What a run can add past
// a bound is what it writes between two walks: its write rate times (the walk's interval, at
// least kMinInterval and at most twice the last walk's duration, plus one walk), and one write is
// at most RLIMIT_FSIZE (max_file_size_bytes). docs/mounts.md states the measured figure.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codeact/status.hpp"

namespace codeact::internal {

// A tree and what a run may add to it.
struct DiskBound {
  std::string path;  // a host directory
  std::string name;  // what a message calls it: "mount /out", "the private $TMPDIR and /work"
  std::int64_t max_bytes = 0;
  std::int64_t max_files = 0;
};

struct TreeUsage {
  std::int64_t bytes = 0;  // allocated: st_blocks * 512 of every entry (a hardlink counts again)
  std::int64_t files = 0;  // entries of every type below the root
  // Directories the walk could not open (permissions) or did not enter (deeper than
  // kMaxWatchDepth): what is in them is not counted, so a run may not add any.
  std::int64_t unread_dirs = 0;
};

inline constexpr int kMaxWatchDepth = 256;

// One walk of `path`. Entries that vanish meanwhile are skipped; the root itself must open.
StatusOr<TreeUsage> MeasureTree(const std::string& path);

// Why `now` is past `bound` over `base` ("" when it is not), e.g. "disk limit: mount /out grew
// by 70 MiB, over its bound of 64 MiB".
std::string OverBound(const DiskBound& bound, const TreeUsage& base, const TreeUsage& now);

class DiskWatch {
 public:
  static constexpr std::chrono::milliseconds kMinInterval{5};

  // Measures every tree now (the base) and hands the watch to a thread. An empty `bounds` uses
  // none.
  static StatusOr<std::unique_ptr<DiskWatch>> Start(
      std::vector<DiskBound> bounds, std::function<void(const std::string&)> on_limit);
  ~DiskWatch();  // Stop()
  DiskWatch(const DiskWatch&) = delete;
  DiskWatch& operator=(const DiskWatch&) = delete;

  // Ends the watch (waits for a walk under way, and for `on_limit` when it is being called; not
  // for the thread, which goes back to wait for another watch). Then one last walk, so that what
  // was written after the thread's last walk counts too: its message, or the thread's, or ""
  // when every tree stayed within its bound.
  std::string Stop();

 private:
  struct State;  // shared with the thread, which may wake after the watch is gone

  explicit DiskWatch(std::shared_ptr<State> state);
  static void Loop(const std::shared_ptr<State>& state);

  const std::shared_ptr<State> state_;
};

}  // namespace codeact::internal
