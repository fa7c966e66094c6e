// The metadata calls (chmod, chown, utime, xattr) against real children, at both levels, cold and
// pooled (process level: forked from the fork server), with the validator off (the executor
// directly, raw os calls: fixtures/metadata/raw_attacks.py) and on (codeact run, pathlib only:
// pathlib_attacks.py): nothing outside the run's writable roots changes, nor a read-only mount,
// nor a root's own mode, also through a link, an fd, or a directory swapped for a link while the
// call runs; inside the roots, chmod, utime, fchmod and the standard library's copies and
// extractions work (normal_paths.py). The host's supervisor is process/metadata_supervisor.hpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "backends/local/local_executor.hpp"
#include "files/mount_capture.hpp"
#include "testing/cli_support.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace fs = std::filesystem;
using testing::Eventually;
using testing::NewLocalExecutor;
using testing::ReadFile;
using testing::RunCli;
using testing::Snapshot;

struct Mode {
  IsolationLevel level;
  bool pooled;
};

std::string ModeName(const ::testing::TestParamInfo<Mode>& info) {
  return std::string(IsolationName(info.param.level)) + (info.param.pooled ? "Pooled" : "Cold");
}

Executor& MetadataExecutor(const Mode& mode) {
  static std::map<std::pair<IsolationLevel, bool>, std::unique_ptr<Executor>> executors;
  auto& e = executors[{mode.level, mode.pooled}];
  if (!e) e = NewLocalExecutor(mode.pooled ? 1 : 0, 60'000, /*fork_server=*/true, mode.level);
  return *e;
}

std::string MetadataFixture(const std::string& name) {
  return testing::FixtureFile("metadata/" + name);
}

std::string Py(const std::string& s) { return "'" + s + "'"; }

// The line an attempt printed ("" when none).
std::string Line(const std::string& out, const std::string& name) {
  const std::string text = "\n" + out;
  const auto at = text.find("\n" + name + ": ");
  if (at == std::string::npos) return "";
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

struct FileState {
  mode_t mode = 0;
  std::int64_t mtime = 0;
  bool has_xattr = false;
  bool operator==(const FileState&) const = default;
};

FileState StateOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  char value[16];
  return {st.st_mode & 07777, static_cast<std::int64_t>(st.st_mtime),
          ::getxattr(path.c_str(), "user.codeact", value, sizeof value) > 0};
}

class MetadataConfinementTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    auto dir = internal::TempDir::Create("codeact-metadata-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = std::make_unique<internal::TempDir>(std::move(*dir));
    const std::string base = dir_->path();
    outside_dir_ = base + "/outside";
    outside_ = outside_dir_ + "/id_key";
    ro_dir_ = base + "/ro";
    ro_ = ro_dir_ + "/data.txt";
    rw_dir_ = base + "/rw";
    for (const auto& d : {outside_dir_, ro_dir_, rw_dir_}) fs::create_directories(d);
    std::ofstream(outside_) << "private";
    std::ofstream(ro_) << "read-only";
    ::chmod(outside_.c_str(), 0600);
    ::chmod(ro_.c_str(), 0644);
    for (const auto& d : {base, outside_dir_, ro_dir_, rw_dir_}) ::chmod(d.c_str(), 0755);
    xattrs_ = ::setxattr(outside_.c_str(), "user.codeact", "1", 1, 0) == 0 &&
              ::setxattr(ro_.c_str(), "user.codeact", "1", 1, 0) == 0;
    before_ = Snap();
  }

  std::map<std::string, FileState> Snap() const {
    return {{outside_, StateOf(outside_)},
            {outside_dir_, StateOf(outside_dir_)},
            {ro_, StateOf(ro_)},
            {ro_dir_, StateOf(ro_dir_)},
            {rw_dir_, StateOf(rw_dir_)}};
  }

  bool Sandboxed() const { return GetParam().level == IsolationLevel::kNamespaces; }

  // The paths as the run sees them: the process level shows host paths.
  std::string Prefix() const {
    const std::string ro_dir = Sandboxed() ? "/in" : ro_dir_;
    const std::string rw_dir = Sandboxed() ? "/out" : rw_dir_;
    return "OUTSIDE = " + Py(outside_) + "\nOUTSIDE_DIR = " + Py(outside_dir_) +
           "\nRO = " + Py(ro_dir + "/data.txt") + "\nRO_DIR = " + Py(ro_dir) +
           "\nRW_DIR = " + Py(rw_dir) + "\n";
  }

  RunSnapshot MountedSnapshot() const {
    RunSnapshot s = Snapshot();
    s.policy.extra_allowed_imports = {"os",      "errno",   "threading", "shutil",
                                      "tarfile", "zipfile", "io",        "pathlib"};
    s.mounts.push_back({ro_dir_, "/in", MountMode::kReadOnly, 1 << 20});
    s.mounts.push_back({rw_dir_, "/out", MountMode::kReadWrite, 1 << 20});
    return s;
  }

  ExecutionResult Run(const std::string& code) {
    Executor& executor = MetadataExecutor(GetParam());
    RunSnapshot snapshot = MountedSnapshot();
    if (GetParam().pooled) {
      EXPECT_TRUE(Eventually(
          [&] {
            executor.Warm(snapshot);
            return !internal::IdleChildPids(executor, &snapshot).empty();
          },
          std::chrono::seconds(30)))
          << "the pool did not fill";
      const auto served = internal::PoolCounters(executor).served;
      ExecutionResult r = executor.Execute({code}, snapshot);
      EXPECT_EQ(internal::PoolCounters(executor).served, served + 1)
          << "the run did not take a pooled child";
      return r;
    }
    return executor.Execute({code}, snapshot);
  }

  void ExpectNothingOutsideChanged() const {
    const auto after = Snap();
    for (const auto& [path, state] : before_) {
      const FileState& now = after.at(path);
      EXPECT_EQ(now.mode, state.mode) << path;
      // The read-write root's mtime moves with the files the run makes in it; its mode may not.
      if (path != rw_dir_) EXPECT_EQ(now.mtime, state.mtime) << path;
      EXPECT_EQ(now.has_xattr, state.has_xattr) << path;
    }
  }

  std::unique_ptr<internal::TempDir> dir_;
  std::string outside_dir_, outside_, ro_dir_, ro_, rw_dir_;
  bool xattrs_ = false;
  std::map<std::string, FileState> before_;
};

// A refusal: EPERM from the supervisor or the main filter; ENOENT where the sandbox does not show
// the path at all; EACCES where the run's uid cannot reach it (a root host's 0700 temp dirs).
void ExpectRefused(const std::string& out, const std::string& name) {
  const std::string line = Line(out, name);
  EXPECT_TRUE(line == name + ": PermissionError: EPERM" ||
              line == name + ": FileNotFoundError: ENOENT" ||
              line == name + ": PermissionError: EACCES")
      << "'" << line << "'\n"
      << out;
}

TEST_P(MetadataConfinementTest, RawCallsChangeNothingOutsideTheWritableRoots) {
  const ExecutionResult r = Run(Prefix() + MetadataFixture("raw_attacks.py"));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text << r.stdout_text;
  const std::string& out = r.stdout_text;
  for (const char* name :
       {"chmod outside", "utime outside", "removexattr outside", "setxattr outside",
        "chown outside", "chmod outside dir", "chmod ro", "utime ro", "removexattr ro",
        "setxattr ro", "chmod through link", "utime through link", "chmod through link dir"}) {
    ExpectRefused(out, name);
  }
  // The run's own files and the mounts it can open: refused by the supervisor, by name.
  for (const char* name :
       {"chmod ro root", "chmod rw root", "chmod work root", "chmod work root by dot",
        "fchmod ro fd", "futimens ro fd", "fremovexattr ro fd", "fchmod work root fd"}) {
    EXPECT_EQ(Line(out, name), std::string(name) + ": PermissionError: EPERM") << out;
  }
  EXPECT_NE(Line(out, "race").find(", "), std::string::npos) << out;
  ExpectNothingOutsideChanged();
  if (!xattrs_) std::cout << "(this file system has no user xattrs: their part checked nothing)\n";
}

TEST_P(MetadataConfinementTest, CallsInsideTheWritableRootsWork) {
  const ExecutionResult r = Run(Prefix() + MetadataFixture("raw_attacks.py"));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text << r.stdout_text;
  const std::string& out = r.stdout_text;
  for (const char* name : {"chmod inside", "utime inside", "fchmod inside", "futimens inside",
                           "chmod in rw", "chmod inside dir", "chown inside to self"}) {
    EXPECT_EQ(Line(out, name), std::string(name) + ": ok") << out;
  }
  EXPECT_EQ(Line(out, "mode inside"), "mode inside: 640") << out;
  EXPECT_EQ(Line(out, "mtime inside"), "mtime inside: 2000000") << out;
  EXPECT_EQ(Line(out, "mode after fchmod"), "mode after fchmod: 600") << out;
  EXPECT_EQ(Line(out, "chown inside to another"), "chown inside to another: PermissionError: EPERM")
      << out;
  struct stat st {};
  ASSERT_EQ(::stat((rw_dir_ + "/made").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_P(MetadataConfinementTest, TheStandardLibrarysCopiesAndExtractionsWork) {
  const ExecutionResult r = Run(MetadataFixture("normal_paths.py"));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text << r.stdout_text;
  const std::string& out = r.stdout_text;
  EXPECT_EQ(Line(out, "copy"), "copy: 640 640 640") << out;
  EXPECT_EQ(Line(out, "utime"), "utime: 1234567") << out;
  EXPECT_EQ(Line(out, "touch"), "touch: ok") << out;
  EXPECT_EQ(Line(out, "tar"), "tar: 750 1600000000") << out;
  EXPECT_EQ(Line(out, "zip"), "zip: zip") << out;
  EXPECT_EQ(Line(out, "copytree"), "copytree: 750") << out;
}

// The validator on (codeact run): what pathlib reaches is refused just the same.
TEST_P(MetadataConfinementTest, ValidatedPathlibCodeChangesNothingOutside) {
  if (GetParam().pooled) GTEST_SKIP() << "codeact run starts one cold child; the cold case runs";
  const std::string level(IsolationName(GetParam().level));
  const auto c = RunCli({"run", "--isolation", level, "--mount", ro_dir_ + ":/in:ro", "--mount",
                         rw_dir_ + ":/out", "-"},
                        Prefix() + MetadataFixture("pathlib_attacks.py"));
  boost::json::value v;
  try {
    v = boost::json::parse(c.out);
  } catch (const std::exception& e) {
    FAIL() << e.what() << ": " << c.out << c.err;
  }
  ASSERT_EQ(v.at("outcome").as_string(), "ok") << c.out;
  const std::string out(v.at("stdout").as_string());
  for (const char* name : {"chmod outside", "touch outside", "chmod ro", "chmod through link"}) {
    const std::string line = Line(out, name);
    EXPECT_TRUE(line == std::string(name) + ": PermissionError" ||
                line == std::string(name) + ": FileNotFoundError")
        << line << "\n"
        << out;
  }
  for (const char* name : {"chmod ro root", "chmod rw root", "chmod work root"})
    EXPECT_EQ(Line(out, name), std::string(name) + ": PermissionError") << out;
  EXPECT_EQ(Line(out, "chmod inside"), "chmod inside: ok") << out;
  EXPECT_EQ(Line(out, "touch inside"), "touch inside: ok") << out;
  EXPECT_EQ(Line(out, "mode inside"), "mode inside: 640") << out;
  ExpectNothingOutsideChanged();
}

INSTANTIATE_TEST_SUITE_P(Levels, MetadataConfinementTest,
                         ::testing::Values(Mode{IsolationLevel::kProcess, false},
                                           Mode{IsolationLevel::kProcess, true},
                                           Mode{IsolationLevel::kNamespaces, false},
                                           Mode{IsolationLevel::kNamespaces, true}),
                         ModeName);

}  // namespace
}  // namespace codeact
