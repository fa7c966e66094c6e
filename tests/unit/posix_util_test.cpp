// The shared POSIX helpers: UniqueFd owns and closes, ErrnoText is strerror's text, and
// PathWithin compares whole components (a sibling with a longer name is not inside).
#include "process/posix_util.hpp"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>
#include <thread>
#include <utility>

namespace codeact::internal {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(PosixUtilTest, UniqueFdClosesOnceAndMoves) {
  int raw = -1;
  {
    UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd);
    raw = fd.get();
    UniqueFd moved(std::move(fd));
    EXPECT_FALSE(fd);  // NOLINT(bugprone-use-after-move): a moved-from fd is empty
    EXPECT_EQ(moved.get(), raw);
    EXPECT_TRUE(IsOpen(raw));
  }
  EXPECT_FALSE(IsOpen(raw));
  UniqueFd released(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int kept = released.release();
  released.reset();
  EXPECT_TRUE(IsOpen(kept));
  ::close(kept);
  EXPECT_FALSE(UniqueFd());
}

TEST(PosixUtilTest, ErrnoTextAndStatus) {
  EXPECT_EQ(ErrnoText(ENOENT), "No such file or directory");
  const Status s = ErrnoStatus("open(/x)", EACCES);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "open(/x) failed: Permission denied");
}

TEST(PosixUtilTest, PathWithinComparesWholeComponents) {
  EXPECT_TRUE(PathWithin("/usr", "/usr"));
  EXPECT_TRUE(PathWithin("/usr/lib/x", "/usr"));
  EXPECT_FALSE(PathWithin("/usrlocal", "/usr"));
  EXPECT_FALSE(PathWithin("/us", "/usr"));
  EXPECT_TRUE(PathWithin("/anything", "/"));
  EXPECT_TRUE(PathWithin("/output/a.txt", "/output/"));
  EXPECT_FALSE(PathWithin("/output", "/output/"));
  EXPECT_FALSE(PathWithin("/output", ""));
}

// What RLIMIT_NPROC counts: this process's threads among them, and nothing for a uid no
// process has.
TEST(PosixUtilTest, TasksOfRealUidCountsThreads) {
  const std::int64_t before = TasksOfRealUid(::getuid());
  EXPECT_GE(before, 1);
  std::promise<void> started, release;
  std::thread extra([&] {
    started.set_value();
    release.get_future().wait();
  });
  started.get_future().wait();
  EXPECT_GE(TasksOfRealUid(::getuid()), 2);
  release.set_value();
  extra.join();
  EXPECT_EQ(TasksOfRealUid(0x7ffffff0), 0);
}

}  // namespace
}  // namespace codeact::internal
