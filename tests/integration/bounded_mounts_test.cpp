// Bounded disk (docs/mounts.md): a run that writes as fast as it can into a read-write mount or
// the process level's private $TMPDIR is ended as `disk_limit` near its bound, at both levels,
// and the host directory is asserted by its allocated bytes and its entries.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "codeact/executor.hpp"
#include "files/disk_watch.hpp"
#include "files/mount_capture.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace fs = std::filesystem;

// What a run writing as fast as it can may add past a bound before the watch ends it
// (docs/mounts.md states it): a few walks' worth at this host's write rate.
constexpr std::int64_t kByteMargin = 48LL << 20;
constexpr std::int64_t kFileMargin = 4000;

class BoundedMountTest : public ::testing::TestWithParam<IsolationLevel> {
 protected:
  void SetUp() override {
    if (sandboxed()) {
      ExecutorOptions options;
      options.isolation = IsolationLevel::kNamespaces;
      options.warm_pool_size = 0;
      auto made = CreateExecutor(options);
      if (!made.ok())
        GTEST_SKIP() << "the namespaces level is not available here: " << made.status().ToString();
    }
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '-');  // "Test/process"
    dir_ = fs::temp_directory_path() / ("codeact-bounded-" + std::to_string(getpid()) + "-" + name);
    fs::create_directories(dir_ / "out");
    std::ofstream(dir_ / "out" / "existing.txt") << "kept";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  bool sandboxed() const { return GetParam() == IsolationLevel::kNamespaces; }
  std::shared_ptr<Executor> executor() const { return testing::LocalExecutor(GetParam()); }

  RunSnapshot Snapshot(ExecutionLimits limits = {}) const {
    RunSnapshot s = testing::Snapshot(limits);
    s.policy.extra_allowed_imports.push_back("os");
    s.policy.extra_allowed_imports.push_back("tempfile");
    return s;
  }

  FileMount OutMount(std::int64_t max_bytes, std::int64_t max_files) const {
    FileMount m;
    m.host_path = (dir_ / "out").string();
    m.mount_path = "/out";
    m.disk_bytes_limit = max_bytes;
    m.disk_files_limit = max_files;
    auto checked = ValidateMount(m);
    EXPECT_TRUE(checked.ok()) << checked.status().ToString();
    return *checked;
  }

  std::string Seen(const FileMount& m) const { return sandboxed() ? m.mount_path : m.host_path; }

  fs::path dir_;
};

std::string Explain(const ExecutionResult& r) {
  return std::string(OutcomeName(r.outcome)) + ": " + r.message + "\n" + r.stdout_text +
         r.stderr_text;
}

TEST_P(BoundedMountTest, FillingARwMountEndsTheRunNearItsByteBound) {
  const FileMount out = OutMount(8LL << 20, 1000);
  const auto base = internal::MeasureTree(out.host_path);
  ASSERT_TRUE(base.ok());
  RunSnapshot s = Snapshot();
  s.mounts.push_back(out);
  s.environment = {{"FILL_DIR", Seen(out)}, {"FILL_MODE", "bytes"}, {"FILL_TOTAL_MB", "256"}};
  const ExecutionResult r = executor()->Execute({testing::Fixture("fill_disk.py")}, s);
  EXPECT_EQ(r.outcome, Outcome::kDiskLimit) << Explain(r);
  EXPECT_EQ(r.message.rfind("disk limit: mount /out grew by ", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("over its bound of 8 MiB"), std::string::npos) << r.message;
  EXPECT_EQ(r.stdout_text.find("filled"), std::string::npos);
  EXPECT_TRUE(r.files.empty());
  const auto after = internal::MeasureTree(out.host_path);
  ASSERT_TRUE(after.ok());
  const std::int64_t added = after->bytes - base->bytes;
  EXPECT_GT(added, 8LL << 20);
  EXPECT_LE(added, (8LL << 20) + kByteMargin) << "overshoot past the bound: " << added;
  EXPECT_LE(after->files - base->files, 40);  // 8 MiB files: a handful
  EXPECT_TRUE(fs::exists(dir_ / "out" / "existing.txt"));
}

TEST_P(BoundedMountTest, FillingARwMountWithFilesEndsTheRunNearItsFileBound) {
  const FileMount out = OutMount(64LL << 20, 200);
  const auto base = internal::MeasureTree(out.host_path);
  ASSERT_TRUE(base.ok());
  RunSnapshot s = Snapshot();
  s.mounts.push_back(out);
  s.environment = {{"FILL_DIR", Seen(out)}, {"FILL_MODE", "files"}, {"FILL_COUNT", "200000"}};
  const ExecutionResult r = executor()->Execute({testing::Fixture("fill_disk.py")}, s);
  EXPECT_EQ(r.outcome, Outcome::kDiskLimit) << Explain(r);
  EXPECT_NE(r.message.find("files, over its bound of 200"), std::string::npos) << r.message;
  const auto after = internal::MeasureTree(out.host_path);
  ASSERT_TRUE(after.ok());
  const std::int64_t added = after->files - base->files;
  EXPECT_GT(added, 200);
  EXPECT_LE(added, 200 + kFileMargin) << "overshoot past the bound: " << added;
  EXPECT_LE(after->bytes - base->bytes, 64LL << 20);
}

TEST_P(BoundedMountTest, ARunWithinItsBoundsEndsOkWithItsFiles) {
  const FileMount out = OutMount(8LL << 20, 1000);
  RunSnapshot s = Snapshot();
  s.mounts.push_back(out);
  s.environment = {{"FILL_DIR", Seen(out)},
                   {"FILL_MODE", "bytes"},
                   {"FILL_TOTAL_MB", "1"},
                   {"FILL_FILE_MB", "1"}};
  const ExecutionResult r = executor()->Execute({testing::Fixture("fill_disk.py")}, s);
  EXPECT_EQ(r.outcome, Outcome::kOk) << Explain(r);
  EXPECT_NE(r.stdout_text.find("filled"), std::string::npos);
  EXPECT_EQ(fs::file_size(dir_ / "out" / "fill-0.bin"), 1u << 20);
}

// --workdir is a read-write mount at /work, held to max_workdir_bytes too.
TEST_P(BoundedMountTest, MaxWorkdirBoundsAWorkdirMount) {
  FileMount work = OutMount(256LL << 20, 65536);
  work.mount_path = "/work";
  ExecutionLimits limits;
  limits.max_workdir_bytes = 16LL << 20;
  RunSnapshot s = Snapshot(limits);
  s.mounts.push_back(work);
  s.environment = {{"FILL_DIR", Seen(work)}, {"FILL_MODE", "bytes"}, {"FILL_TOTAL_MB", "64"}};
  const ExecutionResult r = executor()->Execute({testing::Fixture("fill_disk.py")}, s);
  EXPECT_EQ(r.outcome, Outcome::kDiskLimit) << Explain(r);
  EXPECT_EQ(r.message.rfind("disk limit: mount /work grew by ", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("over its bound of 16 MiB"), std::string::npos) << r.message;
}

// The process level's $TMPDIR is on the host's disk (the namespaces level's /tmp is a tmpfs of
// max_file_size_bytes, which the kernel bounds: a write past it fails with ENOSPC).
TEST_P(BoundedMountTest, MaxWorkdirBoundsTheProcessLevelsTmpdir) {
  if (sandboxed()) GTEST_SKIP() << "the namespaces level's /tmp is a sized tmpfs";
  ExecutionLimits limits;
  limits.max_workdir_bytes = 16LL << 20;
  RunSnapshot s = Snapshot(limits);
  s.environment = {{"FILL_DIR", "TMPDIR"}, {"FILL_MODE", "bytes"}, {"FILL_TOTAL_MB", "64"}};
  const ExecutionResult r = executor()->Execute({testing::Fixture("fill_disk.py")}, s);
  EXPECT_EQ(r.outcome, Outcome::kDiskLimit) << Explain(r);
  EXPECT_EQ(r.message.rfind("disk limit: the private $TMPDIR and working directory grew by ", 0),
            0u)
      << r.message;
  EXPECT_NE(r.message.find("over its bound of 16 MiB"), std::string::npos) << r.message;
  EXPECT_EQ(r.stdout_text.find("filled"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Levels, BoundedMountTest,
                         ::testing::Values(IsolationLevel::kProcess, IsolationLevel::kNamespaces),
                         [](const ::testing::TestParamInfo<IsolationLevel>& info) {
                           return std::string(IsolationName(info.param));
                         });

}  // namespace
}  // namespace codeact
