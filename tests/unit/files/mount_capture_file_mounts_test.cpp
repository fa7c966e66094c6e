// Mount capture for file mounts: one host file at its mount path (the fixture:
// mount_capture_fixture.hpp).
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
#include "json/result_size.hpp"
#include "unit/files/mount_capture_fixture.hpp"

namespace codeact::internal {
namespace {

using namespace capture_test;  // NOLINT(build/namespaces): the fixture and its helpers

// --- File mounts: one host file at its mount path.

class FileMountCaptureTest : public MountCaptureTest {
 protected:
  void SetUp() override {
    MountCaptureTest::SetUp();
    char resolved[PATH_MAX];
    ASSERT_NE(::realpath(dir_->path().c_str(), resolved), nullptr);
    file_ = std::string(resolved) + "/config.json";
    WriteFile(file_, "{}");
    SetMtime(file_, 1000, 0);
    FileMount m{file_, "/data/config.json", MountMode::kReadWrite, 1 << 20};
    m.kind = MountKind::kFile;
    // Beside a directory mount whose files sort after it: "/data/config.json" < "/data2/".
    FileMount dir{mnt_, "/data2", MountMode::kReadWrite, 1 << 20};
    mounts_ = {dir, m};
  }
  std::string file_;
};

TEST_F(FileMountCaptureTest, AnUnchangedFileIsNotReported) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  EXPECT_EQ(before.size(), 1u);
  ASSERT_NE(before.Find(file_), nullptr);
  const Capture capture = Run(before);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  EXPECT_TRUE(capture.omitted.empty()) << Describe(capture);
}

TEST_F(FileMountCaptureTest, AChangedFileIsReportedAtTheMountPath) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(file_, "{\"a\": 1}");
  WriteFile(mnt_ + "/b.txt", "b");
  const Capture capture = Run(before);
  EXPECT_EQ(Paths(capture), (std::vector<std::string>{"/data/config.json", "/data2/b.txt"}))
      << Describe(capture);
  EXPECT_EQ(capture.files[0].data, "{\"a\": 1}");
  EXPECT_EQ(capture.files[0].size, 8);
  EXPECT_EQ(capture.files[0].media_type, "application/json");
  EXPECT_TRUE(capture.omitted.empty()) << Describe(capture);
}

TEST_F(FileMountCaptureTest, AReadOnlyFileMountIsNotLookedAt) {
  mounts_[1].mode = MountMode::kReadOnly;
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  EXPECT_EQ(before.size(), 0u);
  WriteFile(file_, "changed");
  EXPECT_TRUE(Run(before).files.empty());
}

TEST_F(FileMountCaptureTest, TheLimitsApplyAsToAnyFile) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(file_, std::string(100, 'x'));
  mounts_[1].write_bytes_limit = 99;
  Capture capture = Run(before);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/data/config.json"), "mount write limit of 99 bytes reached");
  mounts_[1].write_bytes_limit = 1 << 20;
  CaptureLimits limits;
  limits.max_file_bytes = 50;
  capture = Run(before, limits);
  EXPECT_EQ(ReasonFor(capture, "/data/config.json"),
            "file of 100 bytes exceeds the per-file limit of 50 bytes");
  limits = {};
  limits.max_files = 0;
  capture = Run(before, limits);
  EXPECT_EQ(ReasonFor(capture, "/data/config.json"), "captured file limit of 0 files reached");
}

TEST_F(FileMountCaptureTest, AFileSwappedForASymlinkOrAFifoIsOmittedNotFollowed) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(outside_ + "/secret", "secret");
  ASSERT_EQ(::unlink(file_.c_str()), 0);
  ASSERT_EQ(::symlink((outside_ + "/secret").c_str(), file_.c_str()), 0);
  Capture capture = Run(before);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/data/config.json"), "symlink not followed");
  ASSERT_EQ(::unlink(file_.c_str()), 0);
  ASSERT_EQ(::mkfifo(file_.c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  capture = Run(before);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(ReasonFor(capture, "/data/config.json"), "not a regular file");
  ASSERT_EQ(::unlink(file_.c_str()), 0);
  capture = Run(before);
  EXPECT_EQ(ReasonFor(capture, "/data/config.json"), "file disappeared during capture");
}

// The host chose the file: a second name for it elsewhere does not stop its capture, unlike a
// link planted in a directory mount (HardlinksAreSkipped).
TEST_F(FileMountCaptureTest, AHardlinkedFileIsStillCaptured) {
  ASSERT_EQ(::link(file_.c_str(), (outside_ + "/second-name").c_str()), 0);
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(file_, "new");
  const Capture capture = Run(before);
  EXPECT_EQ(Paths(capture), std::vector<std::string>{"/data/config.json"}) << Describe(capture);
}

// Resident memory of this process, in bytes (VmRSS), or -1.
std::int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// A chain of `depth` directories with names of `name_bytes` under `base`: paths far longer than
// PATH_MAX, made one component at a time. Returns the innermost directory, open.
int MakeDeepChain(const std::string& base, int depth, std::size_t name_bytes) {
  int fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (int i = 0; i < depth && fd >= 0; ++i) {
    std::string name = std::to_string(i) + "-";
    name.resize(name_bytes, 'd');
    if (::mkdirat(fd, name.c_str(), 0755) != 0) {
      ::close(fd);
      return -1;
    }
    const int next = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(fd);
    fd = next;
  }
  return fd;
}

TEST_F(MountCaptureTest, TenThousandFilesWithLongPathsStayBounded) {
  // The attack of issue 11: 10,000 one-byte files under ~12 KB paths. Before the bounds the
  // result was 115 MiB of JSON and the host held ~600 MB.
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  const int leaf = MakeDeepChain(mnt_, 50, 240);
  ASSERT_GE(leaf, 0) << std::strerror(errno);
  for (int i = 0; i < 10000; ++i) {
    const int fd = ::openat(leaf, ("f" + std::to_string(100000 + i)).c_str(),
                            O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << i;
    ASSERT_EQ(::write(fd, "x", 1), 1);
    ::close(fd);
  }
  ::close(leaf);

  const std::int64_t rss_before = ResidentBytes();
  const auto start = std::chrono::steady_clock::now();
  Capture capture = Run(before);
  const auto took = std::chrono::steady_clock::now() - start;
  const std::int64_t rss_after = ResidentBytes();

  const CaptureLimits limits;
  ASSERT_EQ(capture.files.size(), static_cast<std::size_t>(limits.max_files));
  EXPECT_GT(capture.files[0].path.size(), 12000u);
  EXPECT_TRUE(capture.files[0].path.ends_with("/f100000")) << capture.files[0].path.substr(12000);
  EXPECT_TRUE(capture.files[999].path.ends_with("/f100999"));
  EXPECT_EQ(capture.files[999].data, "x");
  ASSERT_EQ(capture.omitted.size(), limits.max_listed_omissions + 1);
  EXPECT_TRUE(capture.omitted[0].path.ends_with("/f101000"));
  EXPECT_EQ(capture.omitted[0].reason, "captured file limit of 1000 files reached");
  EXPECT_EQ(capture.omitted.back().path, "/data/\u2026");
  EXPECT_EQ(capture.omitted.back().reason,
            "and 8900 more files omitted: captured file limit of 1000 files reached");

  ExecutionResult result;
  result.outcome = Outcome::kOk;
  result.files = std::move(capture.files);
  result.omitted_files = std::move(capture.omitted);
  const std::size_t json = ToJson(result).size();
  EXPECT_LT(json, 16u << 20);
  EXPECT_EQ(json, ResultJsonBytes(result));
  std::printf(
      "note: 10,000 files under 12 KB paths: a result of %zu bytes of JSON; the capture took %lld "
      "ms, RSS "
      "%+lld KiB\n",
      json,
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()),
      static_cast<long long>((rss_after - rss_before) / 1024));
  // The capture keeps ~13 MB of paths; all of them would be ~240 MB.
  EXPECT_LT(rss_after - rss_before, 100LL << 20);
}

}  // namespace
}  // namespace codeact::internal
