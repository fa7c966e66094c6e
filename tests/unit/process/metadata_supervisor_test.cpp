// ContainedResolver (process/metadata_supervisor.hpp): what the host's metadata supervisor lets a
// run touch, decided on the host's side, including against a run that swaps a directory for a
// symlink while the host resolves.
#include "process/metadata_supervisor.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "files/mount_capture.hpp"

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;

class ContainedResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create();
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    base_ = dir_->path();
    fs::create_directories(base_ + "/work/sub");
    fs::create_directories(base_ + "/outside");
    Touch(base_ + "/work/sub/f", 0600);
    Touch(base_ + "/outside/f", 0600);
    std::vector<UniqueFd> roots;
    roots.emplace_back(::open((base_ + "/work").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(roots.back());
    resolver_ = std::make_unique<ContainedResolver>(std::move(roots));
    host_root_.reset(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    work_.reset(::open((base_ + "/work").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  }

  static void Touch(const std::string& path, mode_t mode) {
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, mode);
    ASSERT_GE(fd, 0) << path;
    ::close(fd);
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
  }

  static ino_t Inode(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
  }
  static ino_t Inode(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  }

  int Resolve(const std::string& path, UniqueFd& out, bool follow = true) {
    const bool absolute = !path.empty() && path[0] == '/';
    return resolver_->Resolve(absolute ? host_root_.get() : work_.get(), absolute, path, follow,
                              out);
  }

  std::unique_ptr<TempDir> dir_;
  std::string base_;
  std::unique_ptr<ContainedResolver> resolver_;
  UniqueFd host_root_, work_;
};

TEST_F(ContainedResolverTest, AFileBeneathARootResolvesToThatFile) {
  UniqueFd out;
  ASSERT_EQ(Resolve(base_ + "/work/sub/f", out), 0);
  EXPECT_EQ(Inode(out.get()), Inode(base_ + "/work/sub/f"));
  UniqueFd rel;
  ASSERT_EQ(Resolve("sub/f", rel), 0);
  EXPECT_EQ(Inode(rel.get()), Inode(base_ + "/work/sub/f"));
  UniqueFd dir;
  ASSERT_EQ(Resolve("sub/", dir), 0);
  EXPECT_EQ(Inode(dir.get()), Inode(base_ + "/work/sub"));
}

TEST_F(ContainedResolverTest, OutsideTheRootsIsRefused) {
  UniqueFd out;
  EXPECT_EQ(Resolve(base_ + "/outside/f", out), EPERM);
  EXPECT_EQ(Resolve("../outside/f", out), EPERM);
  EXPECT_EQ(Resolve("/etc/passwd", out), EPERM);
  EXPECT_FALSE(out);
}

TEST_F(ContainedResolverTest, TheRootItselfIsRefused) {
  UniqueFd out;
  EXPECT_EQ(Resolve(base_ + "/work", out), EPERM);
  EXPECT_EQ(Resolve(".", out), EPERM);
  EXPECT_EQ(Resolve("sub/..", out), EPERM);
}

TEST_F(ContainedResolverTest, ALinkAnywhereInThePathIsRefused) {
  ASSERT_EQ(::symlink((base_ + "/outside").c_str(), (base_ + "/work/out").c_str()), 0);
  ASSERT_EQ(::symlink((base_ + "/outside/f").c_str(), (base_ + "/work/key").c_str()), 0);
  ASSERT_EQ(::symlink("sub", (base_ + "/work/inner").c_str()), 0);
  UniqueFd out;
  EXPECT_EQ(Resolve("out/f", out), EPERM);
  EXPECT_EQ(Resolve("key", out), EPERM);
  EXPECT_EQ(Resolve("inner/f", out), EPERM);  // even one that stays inside
  // Not following the last one: the link itself, which is the run's.
  ASSERT_EQ(Resolve("key", out, /*follow=*/false), 0);
  EXPECT_EQ(Inode(out.get()), Inode(base_ + "/work/key"));
}

TEST_F(ContainedResolverTest, AHardLinkToAFileIsRefused) {
  ASSERT_EQ(::link((base_ + "/outside/f").c_str(), (base_ + "/work/hard").c_str()), 0);
  UniqueFd out;
  EXPECT_EQ(Resolve("hard", out), EPERM);
}

TEST_F(ContainedResolverTest, MissingPathsSayWhy) {
  UniqueFd out;
  EXPECT_EQ(Resolve("nope", out), ENOENT);
  EXPECT_EQ(Resolve("nope/f", out), ENOENT);
}

TEST_F(ContainedResolverTest, AnFdIsCheckedOnWhatItRefersTo) {
  UniqueFd inside(::open((base_ + "/work/sub/f").c_str(), O_PATH | O_CLOEXEC));
  UniqueFd outside(::open((base_ + "/outside/f").c_str(), O_RDONLY | O_CLOEXEC));
  UniqueFd inside_dir(::open((base_ + "/work/sub").c_str(), O_PATH | O_CLOEXEC));
  UniqueFd outside_dir(::open((base_ + "/outside").c_str(), O_PATH | O_CLOEXEC));
  EXPECT_EQ(resolver_->CheckFd(inside.get(), host_root_.get()), 0);
  EXPECT_EQ(resolver_->CheckFd(inside_dir.get(), host_root_.get()), 0);
  EXPECT_EQ(resolver_->CheckFd(outside.get(), host_root_.get()), EPERM);
  EXPECT_EQ(resolver_->CheckFd(outside_dir.get(), host_root_.get()), EPERM);
  EXPECT_EQ(resolver_->CheckFd(work_.get(), host_root_.get()), EPERM);  // the root itself
}

// A thread exchanges work/d between a directory of the run's and a link to the outside while
// the host resolves "d/f" again and again: every answer is the inside file or a refusal.
TEST_F(ContainedResolverTest, ASymlinkSwapRaceNeverResolvesOutside) {
  fs::create_directories(base_ + "/work/d");
  Touch(base_ + "/work/d/f", 0600);
  ASSERT_EQ(::symlink((base_ + "/outside").c_str(), (base_ + "/work/swap").c_str()), 0);
  const ino_t inside = Inode(base_ + "/work/d/f");
  const ino_t outside = Inode(base_ + "/outside/f");
  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread swapper([&] {
    const std::string a = base_ + "/work/d", b = base_ + "/work/swap";
    while (!stop.load()) {
      if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) ++swaps;
    }
  });
  int resolved_inside = 0, refused = 0, resolved_outside = 0;
  for (int i = 0; i < 20000 || swaps.load() < 100; ++i) {
    UniqueFd out;
    const int err = Resolve("d/f", out);
    if (err == 0) {
      const ino_t got = Inode(out.get());
      if (got == outside) ++resolved_outside;
      if (got == inside) ++resolved_inside;
      // The supervisor's chmod acts on the fd it resolved: never on the outside file.
      ASSERT_EQ(::chmod(("/proc/self/fd/" + std::to_string(out.get())).c_str(), 0644), 0);
    } else {
      ASSERT_TRUE(err == EPERM || err == ENOENT) << err;
      ++refused;
    }
    if (i > 2000000) break;
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(resolved_outside, 0);
  EXPECT_GT(swaps.load(), 0);
  EXPECT_GT(resolved_inside + refused, 0);
  struct stat st {};
  ASSERT_EQ(::stat((base_ + "/outside/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

}  // namespace
}  // namespace codeact::internal
