#include "files/mount_capture.hpp"

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
#include "json/result_size.hpp"
#include "unit/files/mount_capture_fixture.hpp"

namespace codeact::internal {
namespace {

using namespace capture_test;  // NOLINT(build/namespaces): the fixture and its helpers

TEST_F(MountCaptureTest, NewFileIsCaptured) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  EXPECT_EQ(before.size(), 0u);
  WriteFile(mnt_ + "/hello.txt", "hello");
  WriteFile(mnt_ + "/empty.json", "");

  const Capture capture = Run(before);
  ASSERT_EQ(capture.files.size(), 2u) << Describe(capture);
  EXPECT_TRUE(capture.omitted.empty()) << Describe(capture);
  EXPECT_EQ(capture.files[0].path, "/data/empty.json");
  EXPECT_EQ(capture.files[0].media_type, "application/json");
  EXPECT_EQ(capture.files[0].size, 0);
  EXPECT_EQ(capture.files[0].data, "");
  EXPECT_EQ(capture.files[1].path, "/data/hello.txt");
  EXPECT_EQ(capture.files[1].media_type, "text/plain");
  EXPECT_EQ(capture.files[1].size, 5);
  EXPECT_EQ(capture.files[1].data, "hello");
}

TEST_F(MountCaptureTest, SnapshotRecordsStampsKeyedByHostPath) {
  WriteFile(mnt_ + "/a.bin", "abc");
  SetMtime(mnt_ + "/a.bin", 1000, 5);
  const MountSnapshot snapshot = MountSnapshot::Take(mounts_);
  ASSERT_EQ(snapshot.size(), 1u);
  const FileStamp* stamp = snapshot.Find(mnt_ + "/a.bin");
  ASSERT_NE(stamp, nullptr);
  EXPECT_EQ(snapshot.Find(mnt_ + "/b.bin"), nullptr);
  struct stat st {};
  ASSERT_EQ(::lstat((mnt_ + "/a.bin").c_str(), &st), 0);
  EXPECT_EQ(stamp->size, 3);
  EXPECT_EQ(stamp->mtime_ns, 1000LL * 1000000000LL + 5);
  EXPECT_EQ(stamp->inode, static_cast<std::uint64_t>(st.st_ino));
}

TEST_F(MountCaptureTest, ModifiedFileWithSameSizeIsCaptured) {
  WriteFile(mnt_ + "/data.csv", "aaaa");
  SetMtime(mnt_ + "/data.csv", 1000, 0);
  WriteFile(mnt_ + "/untouched.csv", "keep");
  SetMtime(mnt_ + "/untouched.csv", 1000, 0);
  const MountSnapshot before = MountSnapshot::Take(mounts_);

  WriteFile(mnt_ + "/data.csv", "bbbb");  // same size, same inode
  SetMtime(mnt_ + "/data.csv", 2000, 0);

  const Capture capture = Run(before);
  ASSERT_EQ(capture.files.size(), 1u) << Describe(capture);
  EXPECT_EQ(capture.files[0].path, "/data/data.csv");
  EXPECT_EQ(capture.files[0].data, "bbbb");
  EXPECT_EQ(capture.files[0].media_type, "text/csv");
  EXPECT_TRUE(capture.omitted.empty()) << Describe(capture);
}

TEST_F(MountCaptureTest, ChangeKeepingSizeMtimeAndInodeIsNotDetected) {
  // The documented limit of a (size, mtime, inode) stamp.
  WriteFile(mnt_ + "/same.txt", "aaaa");
  SetMtime(mnt_ + "/same.txt", 1000, 0);
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(mnt_ + "/same.txt", "bbbb");
  SetMtime(mnt_ + "/same.txt", 1000, 0);
  EXPECT_TRUE(Run(before).files.empty());
}

TEST_F(MountCaptureTest, UnchangedFilesAreNotReported) {
  MakeDir(mnt_ + "/sub");
  WriteFile(mnt_ + "/a.txt", "a");
  WriteFile(mnt_ + "/sub/b.txt", "b");
  ASSERT_EQ(::symlink("/etc/passwd", (mnt_ + "/old-link").c_str()), 0);
  ASSERT_EQ(::mkfifo((mnt_ + "/old-fifo").c_str(), 0600), 0);
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  EXPECT_EQ(before.size(), 4u);

  const Capture capture = Run(before);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  EXPECT_TRUE(capture.omitted.empty()) << Describe(capture);
}

TEST_F(MountCaptureTest, NestedDirectoriesUseForwardSlashes) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  MakeDir(mnt_ + "/a");
  MakeDir(mnt_ + "/a/b");
  MakeDir(mnt_ + "/a/b/c");
  WriteFile(mnt_ + "/a/b/c/deep.md", "# deep");
  WriteFile(mnt_ + "/a/top.py", "print(1)");

  const Capture capture = Run(before);
  EXPECT_EQ(Paths(capture), (std::vector<std::string>{"/data/a/b/c/deep.md", "/data/a/top.py"}))
      << Describe(capture);
  ASSERT_EQ(capture.files.size(), 2u);
  EXPECT_EQ(capture.files[0].data, "# deep");
  EXPECT_EQ(capture.files[0].media_type, "text/markdown");
  EXPECT_EQ(capture.files[1].media_type, "text/x-python");
}

TEST_F(MountCaptureTest, SymlinksToOutsideSecretsAreNeverFollowed) {
  const std::string secret = "TOP-SECRET-CONTENT";
  WriteFile(outside_ + "/secret.txt", secret);
  WriteFile(mnt_ + "/becomes-link.txt", "harmless");
  const MountSnapshot before = MountSnapshot::Take(mounts_);

  ASSERT_EQ(::symlink((outside_ + "/secret.txt").c_str(), (mnt_ + "/leak.txt").c_str()), 0);
  ASSERT_EQ(::symlink(outside_.c_str(), (mnt_ + "/leakdir").c_str()), 0);
  ASSERT_EQ(::symlink("/etc/passwd", (mnt_ + "/passwd").c_str()), 0);
  ASSERT_EQ(::unlink((mnt_ + "/becomes-link.txt").c_str()), 0);
  ASSERT_EQ(::symlink((outside_ + "/secret.txt").c_str(), (mnt_ + "/becomes-link.txt").c_str()), 0);
  MakeDir(mnt_ + "/sub");
  ASSERT_EQ(::symlink("../../outside/secret.txt", (mnt_ + "/sub/relative").c_str()), 0);

  const Capture capture = Run(before);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  for (const CapturedFile& file : capture.files) {
    EXPECT_EQ(file.data.find(secret), std::string::npos) << file.path;
    EXPECT_EQ(file.data.find("root:"), std::string::npos) << file.path;
  }
  for (const std::string path : {"/data/leak.txt", "/data/leakdir", "/data/passwd",
                                 "/data/becomes-link.txt", "/data/sub/relative"}) {
    EXPECT_EQ(ReasonFor(capture, path), "symlink not followed")
        << path << "; " << Describe(capture);
  }
  // Nothing under the linked directory was walked.
  EXPECT_FALSE(ReasonFor(capture, "/data/leakdir/secret.txt").has_value());
  EXPECT_EQ(capture.omitted.size(), 5u) << Describe(capture);
}

TEST_F(MountCaptureTest, MountRootSwappedForSymlinkCapturesNothing) {
  WriteFile(outside_ + "/secret.txt", "TOP-SECRET");
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  ASSERT_EQ(::rename(mnt_.c_str(), (dir_->path() + "/moved").c_str()), 0);
  ASSERT_EQ(::symlink(outside_.c_str(), mnt_.c_str()), 0);

  const Capture capture = Run(before);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  ASSERT_EQ(capture.omitted.size(), 1u) << Describe(capture);
  EXPECT_EQ(capture.omitted[0].path, "/data");
  EXPECT_NE(capture.omitted[0].reason.find("mount directory could not be opened"),
            std::string::npos)
      << capture.omitted[0].reason;
}

TEST_F(MountCaptureTest, HardlinksAreSkipped) {
  WriteFile(outside_ + "/secret.txt", "TOP-SECRET");
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  ASSERT_EQ(::link((outside_ + "/secret.txt").c_str(), (mnt_ + "/hl.txt").c_str()), 0);
  WriteFile(mnt_ + "/one.txt", "1");
  ASSERT_EQ(::link((mnt_ + "/one.txt").c_str(), (mnt_ + "/two.txt").c_str()), 0);

  const Capture capture = Run(before);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  for (const std::string path : {"/data/hl.txt", "/data/one.txt", "/data/two.txt"}) {
    EXPECT_EQ(ReasonFor(capture, path), "hardlink (st_nlink > 1) skipped") << path;
  }
}

TEST_F(MountCaptureTest, FifoIsSkippedWithoutBlocking) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  const std::string fifo = mnt_ + "/pipe.txt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  WriteFile(mnt_ + "/z.txt", "z");

  auto pending = std::async(std::launch::async, [&] { return Run(before); });
  if (pending.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ADD_FAILURE() << "CaptureChanges blocked on a fifo";
    // Release a reader stuck in open() so that the test ends.
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  }
  const Capture capture = pending.get();
  EXPECT_EQ(ReasonFor(capture, "/data/pipe.txt"), "not a regular file") << Describe(capture);
  EXPECT_EQ(Paths(capture), std::vector<std::string>{"/data/z.txt"});
}

TEST_F(MountCaptureTest, SocketIsSkipped) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  const std::string path = mnt_ + "/sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path)) << "temp path too long for a unix socket";
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  const Capture capture = Run(before);
  ::close(fd);
  EXPECT_TRUE(capture.files.empty());
  EXPECT_EQ(ReasonFor(capture, "/data/sock"), "not a regular file") << Describe(capture);
}

TEST_F(MountCaptureTest, PerFileLimit) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(mnt_ + "/big.txt", std::string(11, 'x'));
  WriteFile(mnt_ + "/fits.txt", std::string(10, 'y'));
  CaptureLimits limits;
  limits.max_file_bytes = 10;

  const Capture capture = Run(before, limits);
  EXPECT_EQ(Paths(capture), std::vector<std::string>{"/data/fits.txt"}) << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/data/big.txt"),
            "file of 11 bytes exceeds the per-file limit of 10 bytes");
}

TEST_F(MountCaptureTest, PerMountLimitCountsCapturedBytes) {
  mounts_[0].write_bytes_limit = 10;
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(mnt_ + "/a.txt", "123456");
  WriteFile(mnt_ + "/b.txt", "123456");
  WriteFile(mnt_ + "/c.txt", "1234");

  const Capture capture = Run(before);
  // Path order: a fits (6), b would make 12, c makes exactly 10.
  EXPECT_EQ(Paths(capture), (std::vector<std::string>{"/data/a.txt", "/data/c.txt"}))
      << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/data/b.txt"), "mount write limit of 10 bytes reached");
}

TEST_F(MountCaptureTest, TotalLimitSpansMounts) {
  const std::string other = dir_->path() + "/other";
  MakeDir(other);
  mounts_.push_back(FileMount{other, "/more", MountMode::kReadWrite, 100});
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(mnt_ + "/x.txt", "123456");
  WriteFile(other + "/y.txt", "123456");
  CaptureLimits limits;
  limits.max_total_bytes = 10;

  const Capture capture = Run(before, limits);
  EXPECT_EQ(Paths(capture), std::vector<std::string>{"/data/x.txt"}) << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/more/y.txt"), "total capture limit of 10 bytes reached");
}

TEST_F(MountCaptureTest, LimitsApplyInOrderFileMountTotal) {
  mounts_[0].write_bytes_limit = 5;
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(mnt_ + "/a-over-all.txt", std::string(11, 'a'));   // > file, > mount, > total
  WriteFile(mnt_ + "/b-over-mount.txt", std::string(6, 'b'));  // > mount, > total
  WriteFile(mnt_ + "/c-over-total.txt", std::string(4, 'c'));  // > total only
  CaptureLimits limits;
  limits.max_file_bytes = 10;
  limits.max_total_bytes = 3;

  const Capture capture = Run(before, limits);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/data/a-over-all.txt"),
            "file of 11 bytes exceeds the per-file limit of 10 bytes");
  EXPECT_EQ(ReasonFor(capture, "/data/b-over-mount.txt"), "mount write limit of 5 bytes reached");
  EXPECT_EQ(ReasonFor(capture, "/data/c-over-total.txt"), "total capture limit of 3 bytes reached");
}

TEST_F(MountCaptureTest, ResultsAreSortedByReportedPath) {
  const std::string first = dir_->path() + "/first";
  MakeDir(first);
  // The host directories sort the other way round from the mount paths.
  mounts_ = {FileMount{mnt_, "/z"}, FileMount{first, "/a"}};
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(mnt_ + "/b.txt", "b");
  WriteFile(mnt_ + "/a.txt", "a");
  MakeDir(first + "/c");
  WriteFile(first + "/c/a.txt", "ca");
  WriteFile(first + "/b.txt", "b");
  ASSERT_EQ(::symlink("x", (mnt_ + "/0-link").c_str()), 0);
  ASSERT_EQ(::symlink("x", (first + "/z-link").c_str()), 0);

  const Capture capture = Run(before);
  EXPECT_EQ(Paths(capture),
            (std::vector<std::string>{"/a/b.txt", "/a/c/a.txt", "/z/a.txt", "/z/b.txt"}));
  ASSERT_EQ(capture.omitted.size(), 2u);
  EXPECT_EQ(capture.omitted[0].path, "/a/z-link");
  EXPECT_EQ(capture.omitted[1].path, "/z/0-link");
}

TEST_F(MountCaptureTest, ReadOnlyMountIsNotScanned) {
  mounts_[0].mode = MountMode::kReadOnly;
  WriteFile(mnt_ + "/existing.txt", "x");
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  EXPECT_EQ(before.size(), 0u);
  WriteFile(mnt_ + "/new.txt", "y");
  const Capture capture = Run(before);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  EXPECT_TRUE(capture.omitted.empty()) << Describe(capture);
}

TEST_F(MountCaptureTest, DeepTreeIsBounded) {
  // At the default depth: 64 levels are entered, the 65th is reported.
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  std::string dir = mnt_;
  for (int depth = 1; depth <= 70; ++depth) {
    dir += "/d";
    MakeDir(dir);
    if (depth == 64) WriteFile(dir + "/at64.txt", "ok");
    if (depth == 65) WriteFile(dir + "/at65.txt", "unseen");
  }
  std::string dir64;
  for (int i = 0; i < 64; ++i) dir64 += "/d";

  const Capture capture = Run(before);
  EXPECT_EQ(Paths(capture), std::vector<std::string>{"/data" + dir64 + "/at64.txt"})
      << Describe(capture);
  ASSERT_EQ(capture.omitted.size(), 1u) << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/data" + dir64 + "/d"),
            "directory nested deeper than 64 levels not scanned");
}

TEST_F(MountCaptureTest, ScanDepthIsConfigurable) {
  CaptureLimits limits;
  limits.max_scan_depth = 1;
  const MountSnapshot before = MountSnapshot::Take(mounts_, limits);
  MakeDir(mnt_ + "/a");
  MakeDir(mnt_ + "/a/b");
  WriteFile(mnt_ + "/a/one.txt", "1");
  WriteFile(mnt_ + "/a/b/two.txt", "2");
  const Capture capture = Run(before, limits);
  EXPECT_EQ(Paths(capture), std::vector<std::string>{"/data/a/one.txt"}) << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/data/a/b"), "directory nested deeper than 1 levels not scanned");
}

TEST_F(MountCaptureTest, UnreadableFilesAndDirectoriesAreReported) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  MakeDir(mnt_ + "/old-locked");
  ASSERT_EQ(::chmod((mnt_ + "/old-locked").c_str(), 0), 0);
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(mnt_ + "/secret.txt", "x");
  ASSERT_EQ(::chmod((mnt_ + "/secret.txt").c_str(), 0), 0);
  MakeDir(mnt_ + "/locked");
  WriteFile(mnt_ + "/locked/inside.txt", "y");
  ASSERT_EQ(::chmod((mnt_ + "/locked").c_str(), 0), 0);

  const Capture capture = Run(before);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/data/secret.txt"), "file could not be opened: Permission denied");
  EXPECT_EQ(ReasonFor(capture, "/data/locked"), "directory could not be opened: Permission denied");
  EXPECT_EQ(capture.omitted.size(), 2u) << Describe(capture);  // not the pre-existing one
}

TEST_F(MountCaptureTest, WideTreeIsBounded) {
  EXPECT_EQ(CaptureLimits().max_scan_entries, 100000);
  EXPECT_EQ(CaptureLimits().max_scan_depth, 64);
  CaptureLimits limits;
  limits.max_scan_entries = 20;
  for (int i = 0; i < 25; ++i) WriteFile(mnt_ + "/" + std::to_string(i), "");
  const MountSnapshot before = MountSnapshot::Take(mounts_, limits);
  EXPECT_EQ(before.size(), 20u);

  const Capture capture = Run(before, limits);
  EXPECT_TRUE(capture.files.empty()) << Describe(capture);
  ASSERT_EQ(capture.omitted.size(), 1u) << Describe(capture);
  EXPECT_EQ(capture.omitted[0].path, "/data");
  EXPECT_EQ(capture.omitted[0].reason, "scan stopped after 20 entries");
}

TEST_F(MountCaptureTest, MissingMountRootIsReported) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  ASSERT_EQ(::rmdir(mnt_.c_str()), 0);
  const Capture capture = Run(before);
  EXPECT_TRUE(capture.files.empty());
  ASSERT_EQ(capture.omitted.size(), 1u);
  EXPECT_EQ(capture.omitted[0].path, "/data");
  EXPECT_EQ(capture.omitted[0].reason,
            "mount directory could not be opened: No such file or directory");
}

TEST_F(MountCaptureTest, CountLimitOmitsTheFilesPastIt) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  for (const char* name : {"e.txt", "a.txt", "d.txt", "b.txt", "c.txt"})
    WriteFile(mnt_ + "/" + name, "x");
  ASSERT_EQ(::symlink("x", (mnt_ + "/f-link").c_str()), 0);
  CaptureLimits limits;
  limits.max_files = 2;

  const Capture capture = Run(before, limits);
  EXPECT_EQ(Paths(capture), (std::vector<std::string>{"/data/a.txt", "/data/b.txt"}))
      << Describe(capture);
  for (const char* path : {"/data/c.txt", "/data/d.txt", "/data/e.txt"}) {
    EXPECT_EQ(ReasonFor(capture, path), "captured file limit of 2 files reached") << path;
  }
  EXPECT_EQ(ReasonFor(capture, "/data/f-link"), "symlink not followed");  // its own reason first
}

TEST_F(MountCaptureTest, PathBytesCountAgainstTheResultBudget) {
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  const std::string long_name = std::string(200, 'p') + ".txt";  // the path is most of the JSON
  WriteFile(mnt_ + "/a-" + long_name, "1");
  WriteFile(mnt_ + "/b-" + long_name, "2");
  WriteFile(mnt_ + "/c-" + long_name, "3");
  WriteFile(mnt_ + "/d.txt", "4");
  CaptureLimits limits;
  limits.max_json_bytes = 700;  // two long entries (280 bytes each) and a short one, not three

  const Capture capture = Run(before, limits);
  EXPECT_EQ(Paths(capture), (std::vector<std::string>{"/data/a-" + long_name,
                                                      "/data/b-" + long_name, "/data/d.txt"}))
      << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/data/c-" + long_name), std::nullopt)  // no room to list it either
      << Describe(capture);
  ASSERT_EQ(capture.omitted.size(), 1u) << Describe(capture);
  EXPECT_EQ(capture.omitted[0].path, "/data/\u2026");
  EXPECT_EQ(capture.omitted[0].reason,
            "and 1 more file omitted: result size limit of 700 bytes reached");
  std::size_t json = 0;
  for (const CapturedFile& f : capture.files) json += CapturedFileJsonBytes(f) + 1;
  for (const OmittedFile& f : capture.omitted) json += OmittedFileJsonBytes(f) + 1;
  EXPECT_LE(json,
            700u + OmittedFileJsonBytes(capture.omitted[0]) + 1);  // the summary is not budgeted
}

TEST_F(MountCaptureTest, OmittedListIsBoundedBySummaryPerMount) {
  const std::string other = dir_->path() + "/other";
  MakeDir(other);
  mounts_.push_back(FileMount{other, "/more", MountMode::kReadWrite, 100});
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(::symlink("x", (mnt_ + "/link" + std::to_string(i)).c_str()), 0);
  ASSERT_EQ(::mkfifo((mnt_ + "/pipe").c_str(), 0600), 0);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(::symlink("x", (other + "/link" + std::to_string(i)).c_str()), 0);
  CaptureLimits limits;
  limits.max_listed_omissions = 2;

  const Capture capture = Run(before, limits);
  EXPECT_TRUE(capture.files.empty());
  // The first two in path order are listed ("/data" sorts before "/more"), the rest summarised.
  ASSERT_EQ(capture.omitted.size(), 4u) << Describe(capture);
  EXPECT_EQ(capture.omitted[0].path, "/data/link0");
  EXPECT_EQ(capture.omitted[1].path, "/data/link1");
  EXPECT_EQ(capture.omitted[2].path, "/data/\u2026");
  EXPECT_EQ(capture.omitted[2].reason,
            "and 5 more files omitted: symlink not followed; not a regular file");
  EXPECT_EQ(capture.omitted[3].path, "/more/\u2026");
  EXPECT_EQ(capture.omitted[3].reason, "and 3 more files omitted: symlink not followed");
}

TEST_F(MountCaptureTest, MountsAreTakenInTheOrderOfTheirFilesPaths) {
  const std::string other = dir_->path() + "/other";
  MakeDir(other);
  mounts_ = {FileMount{mnt_, "/data"}, FileMount{other, "/data-x"}};
  const MountSnapshot before = MountSnapshot::Take(mounts_);
  WriteFile(mnt_ + "/a.txt", "a");
  WriteFile(other + "/b.txt", "b");
  CaptureLimits limits;
  limits.max_files = 1;

  // "/data-x/b.txt" sorts before "/data/a.txt", so it is the one file taken.
  const Capture capture = Run(before, limits);
  EXPECT_EQ(Paths(capture), std::vector<std::string>{"/data-x/b.txt"}) << Describe(capture);
  EXPECT_EQ(ReasonFor(capture, "/data/a.txt"), "captured file limit of 1 files reached");
}

TEST(MediaTypeTest, KnownExtensions) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/o/a.txt", "text/plain"},
      {"/o/a.md", "text/markdown"},
      {"/o/a.csv", "text/csv"},
      {"/o/a.tsv", "text/tab-separated-values"},
      {"/o/a.json", "application/json"},
      {"/o/a.jsonl", "application/jsonl"},
      {"/o/a.html", "text/html"},
      {"/o/a.htm", "text/html"},
      {"/o/a.xml", "application/xml"},
      {"/o/a.yaml", "application/yaml"},
      {"/o/a.yml", "application/yaml"},
      {"/o/a.py", "text/x-python"},
      {"/o/a.js", "text/javascript"},
      {"/o/a.css", "text/css"},
      {"/o/a.svg", "image/svg+xml"},
      {"/o/a.png", "image/png"},
      {"/o/a.jpg", "image/jpeg"},
      {"/o/a.jpeg", "image/jpeg"},
      {"/o/a.gif", "image/gif"},
      {"/o/a.webp", "image/webp"},
      {"/o/a.pdf", "application/pdf"},
      {"/o/a.zip", "application/zip"},
      {"/o/a.tar.gz", "application/gzip"},
      {"/o/a.tar", "application/x-tar"},
      {"/o/a.npy", "application/x-npy"},
      {"/o/a.parquet", "application/vnd.apache.parquet"},
      {"/o/a.log", "text/plain"},
  };
  for (const auto& [path, type] : cases) EXPECT_EQ(MediaTypeForPath(path), type) << path;
}

TEST(MediaTypeTest, CaseInsensitiveWithDefault) {
  EXPECT_EQ(MediaTypeForPath("/o/PLOT.PNG"), "image/png");
  EXPECT_EQ(MediaTypeForPath("/o/Data.Json"), "application/json");
  EXPECT_EQ(MediaTypeForPath("/o/noext"), "application/octet-stream");
  EXPECT_EQ(MediaTypeForPath("/o/.bashrc"), "application/octet-stream");
  EXPECT_EQ(MediaTypeForPath("/o/trailing."), "application/octet-stream");
  EXPECT_EQ(MediaTypeForPath("/o/a.unknownext"), "application/octet-stream");
  EXPECT_EQ(MediaTypeForPath("/dir.txt/file"), "application/octet-stream");
  EXPECT_EQ(MediaTypeForPath(""), "application/octet-stream");
}

}  // namespace
}  // namespace codeact::internal
