// TempDir and RemoveTree (files/mount_capture.hpp): private temporary directories, removed
// without following links out of them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "codeact/json.hpp"
#include "files/mount_capture.hpp"
#include "unit/files/mount_capture_fixture.hpp"

namespace codeact::internal {
namespace {

using namespace capture_test;  // NOLINT(build/namespaces): the fixture and its helpers

// ---- TempDir and RemoveTree ----

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<TempDir> dir = TempDir::Create("codeact-tempdir-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    base_.emplace(std::move(dir).value());
    outside_ = base_->path() + "/precious";
    MakeDir(outside_);
    WriteFile(outside_ + "/keep.txt", "keep me");
  }

  void ExpectOutsideIntact() { EXPECT_EQ(ReadFile(outside_ + "/keep.txt"), "keep me"); }

  std::optional<TempDir> base_;
  std::string outside_;
};

TEST_F(TempDirTest, CreateIsPrivateUnderTmpdirAndRemovedOnDestruction) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  // Searchable by others: a TMPDIR only its owner may search sends a root host's scratch to
  // /run/codeact instead (CliTest.ATmpdirOnlyItsOwnerMaySearchStillRunsAtEveryLevel).
  ASSERT_EQ(::chmod(base_->path().c_str(), 0711), 0);
  ASSERT_EQ(::setenv("TMPDIR", (base_->path() + "/").c_str(), 1), 0);
  StatusOr<TempDir> dir = TempDir::Create("run-");
  if (old != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  const std::string path = dir->path();
  EXPECT_EQ(path.rfind(base_->path() + "/run-", 0), 0u) << path;
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  WriteFile(path + "/file.txt", "x");
  { TempDir gone = std::move(dir).value(); }
  EXPECT_FALSE(Exists(path));
}

TEST_F(TempDirTest, RejectsPrefixWithSlash) {
  StatusOr<TempDir> dir = TempDir::Create("../escape-");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TempDirTest, MoveTransfersOwnership) {
  StatusOr<TempDir> created = TempDir::Create();
  ASSERT_TRUE(created.ok());
  TempDir first = std::move(created).value();
  const std::string path = first.path();
  TempDir second = std::move(first);
  EXPECT_TRUE(first.path().empty());  // NOLINT(bugprone-use-after-move): checking the moved-from
  EXPECT_EQ(second.path(), path);
  EXPECT_TRUE(Exists(path));
  {
    TempDir third = std::move(second);
    EXPECT_TRUE(Exists(path));
  }
  EXPECT_FALSE(Exists(path));
}

TEST_F(TempDirTest, RemovesLockedDirectoriesAndSpecialFiles) {
  StatusOr<TempDir> created = TempDir::Create();
  ASSERT_TRUE(created.ok());
  std::optional<TempDir> dir(std::move(created).value());
  const std::string path = dir->path();
  MakeDir(path + "/locked");
  MakeDir(path + "/locked/inner");
  WriteFile(path + "/locked/inner/f.txt", "x");
  WriteFile(path + "/locked/g.txt", "y");
  ASSERT_EQ(::chmod((path + "/locked/inner/f.txt").c_str(), 0), 0);
  ASSERT_EQ(::chmod((path + "/locked/inner").c_str(), 0), 0);
  ASSERT_EQ(::chmod((path + "/locked").c_str(), 0), 0);
  ASSERT_EQ(::mkfifo((path + "/fifo").c_str(), 0600), 0);
  if (::geteuid() == 0) {
    std::printf(
        "note: running as root, so the chmod 000 directories do not stop removal "
        "either way\n");
  }
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);  // the run dir itself, too
  dir.reset();
  EXPECT_FALSE(Exists(path));
}

TEST_F(TempDirTest, SymlinksInsideAreRemovedNotFollowed) {
  StatusOr<TempDir> created = TempDir::Create();
  ASSERT_TRUE(created.ok());
  std::optional<TempDir> dir(std::move(created).value());
  const std::string path = dir->path();
  ASSERT_EQ(::symlink(outside_.c_str(), (path + "/to-dir").c_str()), 0);
  ASSERT_EQ(::symlink((outside_ + "/keep.txt").c_str(), (path + "/to-file").c_str()), 0);
  MakeDir(path + "/sub");
  ASSERT_EQ(::symlink("../../precious", (path + "/sub/relative").c_str()), 0);
  ASSERT_EQ(::symlink(outside_.c_str(), (path + "/sub/to-dir").c_str()), 0);
  ASSERT_EQ(::chmod((path + "/sub").c_str(), 0), 0);
  dir.reset();
  EXPECT_FALSE(Exists(path));
  ExpectOutsideIntact();
}

TEST_F(TempDirTest, RemoveTreeOnASymlinkRemovesOnlyTheLink) {
  const std::string link = base_->path() + "/link";
  ASSERT_EQ(::symlink(outside_.c_str(), link.c_str()), 0);
  EXPECT_TRUE(RemoveTree(link));
  EXPECT_FALSE(Exists(link));
  ExpectOutsideIntact();
  EXPECT_TRUE(RemoveTree(base_->path() + "/never-existed"));
}

TEST_F(TempDirTest, RemoveTreeHandlesDeepTrees) {
  const std::string root = base_->path() + "/deep";
  MakeDir(root);
  // Deeper than the 64 directories RemoveTree holds open at once: deeper subtrees get hoisted.
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  for (int depth = 0; depth < 200; ++depth) {
    ASSERT_EQ(::mkdirat(fd, "d", 0755), 0) << depth;
    if (depth % 50 == 0) {
      const int file = ::openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      ASSERT_GE(file, 0);
      ::close(file);
    }
    const int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(next, 0);
    ::close(fd);
    fd = next;
  }
  ::close(fd);
  EXPECT_TRUE(RemoveTree(root));
  EXPECT_FALSE(Exists(root));
  ExpectOutsideIntact();
}

}  // namespace
}  // namespace codeact::internal
