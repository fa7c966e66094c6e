// File capture through a real run: what the code writes to a read-write mount comes back;
// links, escapes and read-only mounts do not.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backends/local/local_executor.hpp"
#include "codeact/executor.hpp"
#include "codeact/json.hpp"
#include "files/mount_capture.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace fs = std::filesystem;

class FileCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("codeact-capture-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ / "rw");
    fs::create_directories(root_ / "ro");
    std::ofstream(root_ / "secret.txt") << "TOP SECRET";
    std::ofstream(root_ / "rw" / "existing.txt") << "old";
    std::ofstream(root_ / "rw" / "untouched.txt") << "same";
  }
  void TearDown() override { fs::remove_all(root_); }

  // `executor`: the runtime guard's Landlock makes read-only mounts read-only at the process
  // level too and refuses links from outside; the tests of what capture does with such files
  // run without it.
  ExecutionResult Run(const std::string& code, ExecutionLimits limits = {},
                      std::int64_t mount_limit = 1 << 20,
                      const std::shared_ptr<Executor>& executor = testing::LocalExecutor()) {
    RunSnapshot s;
    s.limits = limits;
    s.mounts.push_back({(root_ / "rw").string(), "/out", MountMode::kReadWrite, mount_limit});
    s.mounts.push_back({(root_ / "ro").string(), "/in", MountMode::kReadOnly, 1 << 20});
    s.environment["RW"] = (root_ / "rw").string();
    s.environment["RO"] = (root_ / "ro").string();
    s.environment["SECRET"] = (root_ / "secret.txt").string();
    return executor->Execute({code}, s);
  }

  fs::path root_;
};

const CapturedFile* Find(const ExecutionResult& r, const std::string& path) {
  for (const auto& f : r.files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

TEST_F(FileCaptureTest, NewModifiedAndNestedFilesComeBackSorted) {
  const ExecutionResult r =
      Run(testing::Program("file_capture/new_modified_and_nested_files_come_back_sorted"));
  ASSERT_EQ(r.outcome, Outcome::kOk)
      << r.message << r.stderr_text << (r.error ? r.error->traceback : "");
  // Under the guard's Landlock, or a root host's private mount namespace, a read-only mount is
  // read-only at the process level too.
  const bool read_only =
      internal::GuardStatus(*testing::LocalExecutor()).landlock_abi > 0 || geteuid() == 0;
  EXPECT_EQ(r.stdout_text, read_only ? "refused\n" : "written\n");
  ASSERT_EQ(r.files.size(), 3u);
  EXPECT_EQ(r.files[0].path, "/out/b.json");
  EXPECT_EQ(r.files[1].path, "/out/deep/er/a.csv");
  EXPECT_EQ(r.files[2].path, "/out/existing.txt");
  EXPECT_EQ(r.files[0].media_type, "application/json");
  EXPECT_EQ(r.files[1].data, "a,b\n1,2\n");
  EXPECT_EQ(r.files[2].data, "new content");
  EXPECT_EQ(Find(r, "/out/untouched.txt"), nullptr);
  for (const auto& f : r.files) EXPECT_EQ(f.path.find("/in/"), std::string::npos);
}

TEST_F(FileCaptureTest, LinksNeverLeakOutsideContent) {
  const ExecutionResult r = Run(testing::Program("file_capture/links_never_leak_outside_content"),
                                {}, 1 << 20, testing::UnguardedLocalExecutor());
  ASSERT_EQ(r.outcome, Outcome::kOk)
      << r.message << r.stderr_text << (r.error ? r.error->traceback : "");
  for (const auto& f : r.files) EXPECT_EQ(f.data.find("TOP SECRET"), std::string::npos) << f.path;
  EXPECT_EQ(Find(r, "/out/link.txt"), nullptr);
  EXPECT_EQ(Find(r, "/out/hard.txt"), nullptr);
  bool link_reported = false, hard_reported = false;
  for (const auto& o : r.omitted_files) {
    if (o.path == "/out/link.txt") link_reported = o.reason.find("symlink") != std::string::npos;
    if (o.path == "/out/hard.txt") hard_reported = o.reason.find("hardlink") != std::string::npos;
  }
  EXPECT_TRUE(link_reported);
  EXPECT_EQ(hard_reported, r.stdout_text == "linked\n");
}

TEST_F(FileCaptureTest, LimitsOmitWithReasons) {
  ExecutionLimits limits;
  limits.max_capture_file_bytes = 1000;
  limits.max_capture_total_bytes = 1500;
  const ExecutionResult r = Run(testing::Program("file_capture/limits_omit_with_reasons"), limits);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].path, "/out/b_ok.txt");
  ASSERT_EQ(r.omitted_files.size(), 2u);
  EXPECT_EQ(r.omitted_files[0].path, "/out/a_big.bin");
  EXPECT_NE(r.omitted_files[0].reason.find("per-file limit"), std::string::npos)
      << r.omitted_files[0].reason;
  EXPECT_EQ(r.omitted_files[1].path, "/out/c_over_total.txt");
  EXPECT_NE(r.omitted_files[1].reason.find("total"), std::string::npos)
      << r.omitted_files[1].reason;
}

TEST_F(FileCaptureTest, PerMountLimit) {
  const ExecutionResult r =
      Run(testing::Program("file_capture/per_mount_limit"), {}, /*mount_limit=*/1000);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message;
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].path, "/out/one.txt");
  ASSERT_EQ(r.omitted_files.size(), 1u);
  EXPECT_NE(r.omitted_files[0].reason.find("mount"), std::string::npos)
      << r.omitted_files[0].reason;
}

TEST_F(FileCaptureTest, WorkingDirectoryIsFreshPrivateAndRemoved) {
  const ExecutionResult r =
      Run(testing::Program("file_capture/working_directory_is_fresh_private_and_removed"));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  std::istringstream lines(r.stdout_text);
  std::string cwd, listing, mode;
  std::getline(lines, cwd);
  std::getline(lines, listing);
  std::getline(lines, mode);
  EXPECT_EQ(listing, "[]");
  EXPECT_EQ(mode, "0o700");
  EXPECT_TRUE(testing::Eventually([&] { return !fs::exists(cwd); })) << cwd;
  EXPECT_TRUE(r.files.empty());  // the working directory is not a mount
}

// The runner ends its process with _exit: what the code wrote to a file it left open is flushed
// before the terminal frame, as an interpreter's exit would, so the capture after that frame and
// the host's copy hold all of it. A cold child and a fork server's, at both levels.
TEST_F(FileCaptureTest, WhatTheCodeWroteToAFileItLeftOpenIsCaptured) {
  const std::string code =
      testing::Program("file_capture/what_the_code_wrote_to_a_file_it_left_open_is_captured");
  const std::pair<const char*, std::shared_ptr<Executor>> executors[] = {
      {"process, cold", testing::LocalExecutor()},
      {"namespaces, cold", testing::LocalExecutor(IsolationLevel::kNamespaces)},
      {"process, fork server", testing::NewLocalExecutor(1)},
      {"namespaces, fork server",
       testing::NewLocalExecutor(1, 60'000, true, IsolationLevel::kNamespaces)}};
  for (const auto& [name, executor] : executors) {
    fs::remove(root_ / "rw" / "open.txt");
    fs::remove(root_ / "rw" / "open.bin");
    const ExecutionResult r = Run(code, {}, 1 << 20, executor);
    ASSERT_EQ(r.outcome, Outcome::kOk) << name << ": " << r.message << r.stderr_text;
    const CapturedFile* text = Find(r, "/out/open.txt");
    const CapturedFile* data = Find(r, "/out/open.bin");
    ASSERT_TRUE(text != nullptr && data != nullptr) << name;
    EXPECT_EQ(text->size, 9) << name;
    EXPECT_EQ(data->size, 10000) << name;
    EXPECT_EQ(fs::file_size(root_ / "rw" / "open.txt"), 9u) << name;
    EXPECT_EQ(fs::file_size(root_ / "rw" / "open.bin"), 10000u) << name;
  }
}

// Resident memory of this process in bytes: "VmRSS" now, or "VmHWM", the peak since the last
// ResetPeakResident(); -1 when /proc does not say.
std::int64_t ProcStatusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux 4.0+); false where the kernel does not allow it.
bool ResetPeakResident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return clear.good();
}

TEST_F(FileCaptureTest, TenThousandFilesUnderLongPathsKeepTheResultAndTheHostSmall) {
  // Issue 11: 10,000 one-byte files under ~12 KB paths made a 115 MiB result and ~600 MB of
  // host memory. The validator is not in the way here (as in every executor test).
  const std::string code =
      "import os\n"
      "fd = os.open(os.environ['RW'], os.O_RDONLY | os.O_DIRECTORY)\n"
      "for i in range(50):\n"  // 50 levels of 240-byte names: paths of ~12 KB, past PATH_MAX
      "    name = ('%02d-' % i).ljust(240, 'd')\n"
      "    os.mkdir(name, dir_fd=fd)\n"
      "    inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)\n"
      "    os.close(fd)\n"
      "    fd = inner\n"
      "for i in range(10000):\n"
      "    f = os.open('f%05d' % i, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)\n"
      "    os.write(f, b'x')\n"
      "    os.close(f)\n"
      "print('written')\n";
  ExecutionLimits limits;
  limits.wall_timeout_ms = 120'000;  // creating the files takes a while on a loaded machine
  const bool peak_known = ResetPeakResident();
  const std::int64_t rss_before = ProcStatusBytes("VmRSS");
  ExecutionResult r = Run(code, limits);
  const std::string json = ToJson(r);
  const std::int64_t rss_after = ProcStatusBytes("VmRSS");
  const std::int64_t peak = ProcStatusBytes("VmHWM");
  // The deep tree is past what std::filesystem removes; RemoveTree works below PATH_MAX.
  EXPECT_TRUE(internal::RemoveTree((root_ / "rw").string()));

  ASSERT_EQ(r.outcome, Outcome::kOk)
      << r.message << r.stderr_text << (r.error ? r.error->traceback : "");
  EXPECT_EQ(r.stdout_text, "written\n");
  EXPECT_LT(json.size(), 16u << 20);
  EXPECT_EQ(r.files.size(), 1000u);
  ASSERT_FALSE(r.files.empty());
  EXPECT_GT(r.files[0].path.size(), 12'000u);
  EXPECT_TRUE(r.files[0].path.ends_with("/f00000"));
  EXPECT_LE(r.omitted_files.size(), 101u);
  ASSERT_FALSE(r.omitted_files.empty());
  EXPECT_EQ(r.omitted_files.back().path, "/out/\u2026");
  EXPECT_EQ(r.omitted_files.back().reason,
            "and 8900 more files omitted: captured file limit of 1000 files reached");
  ASSERT_GT(rss_before, 0) << "no VmRSS in /proc/self/status";
  const std::int64_t growth = rss_after - rss_before;
  const std::int64_t peak_growth = peak_known ? peak - rss_before : growth;
  std::printf("note: result JSON %zu bytes; host RSS %+lld KiB after the run, peak %+lld KiB%s\n",
              json.size(), static_cast<long long>(growth / 1024),
              static_cast<long long>(peak_growth / 1024),
              peak_known ? "" : " (VmHWM could not be reset: peak not measured)");
  EXPECT_LT(growth, 100LL << 20);
  EXPECT_LT(peak_growth, 100LL << 20);
}

}  // namespace
}  // namespace codeact
