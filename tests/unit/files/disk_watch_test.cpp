// The disk watch (files/disk_watch.hpp): what a walk counts, what it never follows, and that a
// tree past its bound is reported, by the thread while it runs and by the last walk of Stop.
#include "files/disk_watch.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "files/mount_capture.hpp"

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;

void WriteBytes(const fs::path& path, std::size_t n) {
  std::ofstream out(path, std::ios::binary);
  const std::string chunk(1 << 16, 'x');
  for (std::size_t done = 0; done < n; done += chunk.size()) out << chunk;
}

class DiskWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("codeact-disk-watch-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(*dir));
    root_ = fs::path(dir_->path()) / "tree";
    fs::create_directory(root_);
  }
  std::optional<TempDir> dir_;
  fs::path root_;
};

TEST_F(DiskWatchTest, CountsAllocatedBytesAndEveryEntryFollowingNoLink) {
  fs::create_directories(root_ / "a" / "b");
  WriteBytes(root_ / "a" / "b" / "one.bin", 1 << 20);
  // A big file outside, reached by a symlink and a symlinked directory: neither counts.
  WriteBytes(fs::path(dir_->path()) / "outside.bin", 4 << 20);
  fs::create_symlink(fs::path(dir_->path()) / "outside.bin", root_ / "link");
  fs::create_directory_symlink(dir_->path(), root_ / "dirlink");
  auto usage = MeasureTree(root_.string());
  ASSERT_TRUE(usage.ok()) << usage.status().ToString();
  EXPECT_EQ(usage->files, 5);  // a, a/b, a/b/one.bin, link, dirlink
  EXPECT_GE(usage->bytes, 1 << 20);
  EXPECT_LT(usage->bytes, 2 << 20);
  EXPECT_EQ(usage->unread_dirs, 0);
  EXPECT_FALSE(MeasureTree((root_ / "link").string()).ok());  // a root that is a link
}

TEST_F(DiskWatchTest, OverBoundNamesTheTreeAndTheBound) {
  const DiskBound bound{root_.string(), "mount /out", 8 << 20, 100};
  const TreeUsage base{1 << 20, 10, 0};
  EXPECT_EQ(OverBound(bound, base, {9 << 20, 50, 0}), "");  // 8 MiB added: at the bound
  EXPECT_EQ(OverBound(bound, base, {10 << 20, 50, 0}),
            "disk limit: mount /out grew by 9 MiB, over its bound of 8 MiB");
  EXPECT_EQ(OverBound(bound, base, {1 << 20, 111, 0}),
            "disk limit: mount /out grew by 101 files, over its bound of 100");
  EXPECT_NE(OverBound(bound, base, {1 << 20, 10, 1}).find("cannot read"), std::string::npos);
  // What the run deleted makes room.
  EXPECT_EQ(OverBound(bound, {20 << 20, 10, 0}, {27 << 20, 10, 0}), "");
}

TEST_F(DiskWatchTest, TheThreadReportsATreePastItsBoundWhileItGrows) {
  std::promise<std::string> told;
  auto watch = DiskWatch::Start({{root_.string(), "mount /out", 1 << 20, 1000}},
                                [&](const std::string& m) { told.set_value(m); });
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  WriteBytes(root_ / "big.bin", 2 << 20);
  auto future = told.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(future.get().rfind("disk limit: mount /out grew by 2", 0), 0u);
  EXPECT_NE((*watch)->Stop().find("over its bound of 1 MiB"), std::string::npos);
}

// Every watch has a thread while it runs, also past the threads kept waiting between watches
// and in a second round on the threads the first left: the last of eight watches started
// together is walked, and reports its tree, while the seven others still run.
TEST_F(DiskWatchTest, EveryWatchIsWalkedWhileManyRunRoundAfterRound) {
  constexpr int kWatches = 8;
  for (int round = 0; round < 2; ++round) {
    std::vector<fs::path> trees;
    std::vector<std::unique_ptr<DiskWatch>> watches;
    std::promise<std::string> told;
    for (int i = 0; i < kWatches; ++i) {
      trees.push_back(root_ / ("r" + std::to_string(round) + "-" + std::to_string(i)));
      fs::create_directory(trees.back());
      auto on_limit = [&told, last = i == kWatches - 1](const std::string& m) {
        if (last) told.set_value(m);
      };
      auto watch = DiskWatch::Start(
          {{trees.back().string(), "tree " + std::to_string(i), 1 << 20, 1000}}, on_limit);
      ASSERT_TRUE(watch.ok()) << watch.status().ToString();
      watches.push_back(std::move(*watch));
    }
    WriteBytes(trees.back() / "big.bin", 2 << 20);
    auto future = told.get_future();
    ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "round " << round;
    EXPECT_EQ(future.get().rfind("disk limit: tree 7 grew by 2", 0), 0u);
    for (int i = 0; i < kWatches - 1; ++i) EXPECT_EQ(watches[i]->Stop(), "") << i;
  }
}

TEST_F(DiskWatchTest, StopsLastWalkCountsWhatCameAfterTheThreadsLast) {
  auto watch = DiskWatch::Start({{root_.string(), "mount /out", 1 << 20, 3}}, [](auto&) {});
  ASSERT_TRUE(watch.ok());
  for (int i = 0; i < 4; ++i) std::ofstream(root_ / ("f" + std::to_string(i)));
  EXPECT_EQ((*watch)->Stop(), "disk limit: mount /out grew by 4 files, over its bound of 3");
}

TEST_F(DiskWatchTest, WithinItsBoundNothingIsReported) {
  WriteBytes(root_ / "before.bin", 4 << 20);  // the base: what was there counts for nothing
  auto watch = DiskWatch::Start({{root_.string(), "mount /out", 1 << 20, 10}}, [](auto&) {});
  ASSERT_TRUE(watch.ok());
  WriteBytes(root_ / "small.bin", 256 << 10);
  EXPECT_EQ((*watch)->Stop(), "");
}

TEST_F(DiskWatchTest, ADirectoryHiddenFromTheWalkIsReported) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads a 0000 directory: nothing is hidden from it";
  auto watch = DiskWatch::Start({{root_.string(), "mount /out", 64 << 20, 1000}}, [](auto&) {});
  ASSERT_TRUE(watch.ok());
  fs::create_directory(root_ / "hidden");
  WriteBytes(root_ / "hidden" / "inside.bin", 1 << 20);
  ASSERT_EQ(::chmod((root_ / "hidden").c_str(), 0), 0);
  const std::string over = (*watch)->Stop();
  ::chmod((root_ / "hidden").c_str(), 0700);
  EXPECT_NE(over.find("holds a directory the disk watch cannot read"), std::string::npos) << over;
}

TEST_F(DiskWatchTest, ATreeDeeperThanTheWalkGoesIsReported) {
  auto watch = DiskWatch::Start({{root_.string(), "mount /out", 64 << 20, 100000}}, [](auto&) {});
  ASSERT_TRUE(watch.ok());
  const int root_fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(root_fd, 0);
  int fd = root_fd;
  for (int i = 0; i < kMaxWatchDepth + 2; ++i) {
    ASSERT_EQ(::mkdirat(fd, "d", 0700), 0);
    const int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY);
    if (fd != root_fd) ::close(fd);
    fd = next;
  }
  if (fd != root_fd) ::close(fd);
  ::close(root_fd);
  EXPECT_NE((*watch)->Stop().find("deeper than 256 levels"), std::string::npos);
}

}  // namespace
}  // namespace codeact::internal
