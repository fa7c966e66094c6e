// The shared POSIX helpers: UniqueFd owns and closes, ErrnoText is strerror's text, and
// PathWithin compares whole components (a sibling with a longer name is not inside);
// ProcStatField counts a /proc/<pid>/stat line's fields after the command.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <thread>
#include <utility>

#include "os/errno_status.hpp"
#include "os/path_within.hpp"
#include "os/proc_stat.hpp"
#include "os/proc_tasks.hpp"
#include "os/unique_fd.hpp"

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

namespace codeact::internal {
namespace {

TEST(ProcStatFieldTest, FieldsAreCountedAfterACommandWithSpacesAndParentheses) {
  const std::string_view stat = "42 (a b) (c)) S 1 42 42 0 -1 4194560\n";
  EXPECT_EQ(ProcStatField(stat, 3), "S");
  EXPECT_EQ(ProcStatField(stat, 4), "1");
  EXPECT_EQ(ProcStatField(stat, 9), "4194560");  // the last one, without its newline
  EXPECT_EQ(ProcStatNumber(stat, 9), 4194560u);
  EXPECT_FALSE(ProcStatField(stat, 10).has_value());
  EXPECT_FALSE(ProcStatNumber(stat, 8).has_value());  // "-1" is not an unsigned number
  EXPECT_FALSE(ProcStatField(stat, 2).has_value());
  EXPECT_FALSE(ProcStatField("no command here", 3).has_value());
}

TEST(ProcStatFieldTest, ThisProcessStartTimeAndEnvironmentBlockAreRead) {
  std::ifstream in("/proc/self/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GT(ProcStatNumber(stat, 22).value_or(0), 0u);  // start time
  EXPECT_LT(ProcStatNumber(stat, 50).value_or(0), ProcStatNumber(stat, 51).value_or(0));
}

}  // namespace
}  // namespace codeact::internal
