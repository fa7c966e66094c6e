// The one-shot `codeact run` (cli/run_command.cpp) and what it reuses across invocations: the
// runner's bytecode and the interpreter's version in the per-user cache, the default child
// interpreter, and nothing left behind when a run is refused.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/local/runner_files.hpp"
#include "codeact/validator.hpp"
#include "common/data_dir.hpp"
#include "common/user_cache.hpp"
#include "files/mount_capture.hpp"
#include "files/scratch_owner.hpp"
#include "testing/cli_support.hpp"
#include "testing/fixtures.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;
using testing::RunCli;
using testing::RunProgram;
using testing::SourcePath;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Points the per-user cache at a fresh directory for one test.
class CacheDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = internal::TempDir::Create("codeact-oneshot-test-");
    ASSERT_TRUE(dir.ok());
    base_.emplace(std::move(*dir));
    ::chmod(base_->path().c_str(), 0755);
    cache_dir_ = base_->path() + "/cache";
    if (const char* old = std::getenv("CODEACT_CACHE_DIR")) old_ = old;
    ::setenv("CODEACT_CACHE_DIR", cache_dir_.c_str(), 1);
  }
  void TearDown() override {
    if (old_) {
      ::setenv("CODEACT_CACHE_DIR", old_->c_str(), 1);
    } else {
      ::unsetenv("CODEACT_CACHE_DIR");
    }
  }
  std::optional<internal::TempDir> base_;
  std::string cache_dir_;
  std::optional<std::string> old_;
};

TEST_F(CacheDirTest, TheRunnerIsCompiledOnceAndACorruptEntryIsReplaced) {
  ASSERT_TRUE(Validator::Embedded().ok());
  const std::string source = SourcePath("resources/runner.py");
  auto name = internal::RunnerCacheEntryName(source);
  ASSERT_TRUE(name.ok()) << name.status().ToString();
  const std::string entry = cache_dir_ + "/" + *name;

  std::string runner = source;
  auto first = internal::PrivateRunnerDir(runner, {.required = false, .use_cache = true});
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ(fs::path(runner).filename(), "runner.pyc");
  const std::string compiled = ReadFile(runner);
  const std::string stored = ReadFile(entry);
  ASSERT_FALSE(stored.empty()) << "no cache entry at " << entry;
  // With the cache each module is a hard link to the entry named by its bytecode's hash: no
  // new inode per run.
  struct stat linked {};
  ASSERT_EQ(::stat(runner.c_str(), &linked), 0);
  EXPECT_EQ(linked.st_nlink, 2u) << runner << " is not linked to a cache entry";
  // A linked file changed later (through the link, so in the cache) is not linked again.
  std::ofstream(runner, std::ios::binary | std::ios::trunc) << "tampered";

  // One flipped byte of bytecode fails its hash: the entry is not used, but compiled anew.
  std::string corrupt = stored;
  corrupt.back() ^= 0x01;
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << corrupt;
  std::string again = source;
  auto second = internal::PrivateRunnerDir(again, {.required = false, .use_cache = true});
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ(ReadFile(again), compiled);
  EXPECT_EQ(ReadFile(entry), stored) << "the corrupt entry was not replaced";

  // Without the cache nothing is read or written there.
  fs::remove(entry);
  std::string uncached = source;
  auto third = internal::PrivateRunnerDir(uncached, {.required = false, .use_cache = false});
  ASSERT_TRUE(third.ok() && third->has_value());
  EXPECT_EQ(ReadFile(uncached), compiled);
  EXPECT_FALSE(fs::exists(entry));
  ASSERT_EQ(::stat(uncached.c_str(), &linked), 0);
  EXPECT_EQ(linked.st_nlink, 1u) << "linked to the cache without it";
}

// The cache's key is the sources' identity as `stat` gives it, read without their bytes: the same
// sources name the same entry, a source written to names another, and its new bytecode is what
// the private directory gets.
TEST_F(CacheDirTest, ASourceWrittenToNamesANewEntry) {
  ASSERT_TRUE(Validator::Embedded().ok());
  auto copy = internal::TempDir::Create("codeact-oneshot-sources-");
  ASSERT_TRUE(copy.ok());
  for (const auto& e : fs::directory_iterator(SourcePath("resources"))) {
    if (e.path().extension() == ".py") fs::copy_file(e.path(), copy->path() / e.path().filename());
  }
  const std::string source = copy->path() + "/runner.py";
  auto before = internal::RunnerCacheEntryName(source);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(*internal::RunnerCacheEntryName(source), *before);
  std::string runner = source;
  auto first = internal::PrivateRunnerDir(runner, {.required = false, .use_cache = true});
  ASSERT_TRUE(first.ok() && first->has_value());
  const std::string compiled = ReadFile(runner);

  std::ofstream(source, std::ios::app) << "\n_CHANGED = 1\n";
  auto after = internal::RunnerCacheEntryName(source);
  ASSERT_TRUE(after.ok());
  EXPECT_NE(*after, *before);
  std::string again = source;
  auto second = internal::PrivateRunnerDir(again, {.required = false, .use_cache = true});
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_NE(ReadFile(again), compiled) << "the changed source's bytecode was not compiled anew";
  EXPECT_TRUE(fs::exists(cache_dir_ + "/" + *after));

  fs::remove(copy->path() + "/runner_state.py");
  EXPECT_FALSE(internal::RunnerCacheEntryName(source).ok()) << "a missing source has no key";
}

// The validator package, for children that validate their code, is staged like the runner: every
// module but __main__ as bytecode under validator/, from one cache entry checked on every use.
TEST_F(CacheDirTest, TheValidatorPackageIsStagedFromTheCacheLikeTheRunner) {
  ASSERT_TRUE(Validator::Embedded().ok());
  const std::string package = SourcePath("validator");
  auto first = internal::TempDir::Create("codeact-oneshot-stage-");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(internal::StageValidatorPackage(first->path(), package, true).ok());
  std::vector<std::string> staged;
  for (const auto& e : fs::directory_iterator(first->path() + "/validator"))
    staged.push_back(e.path().filename());
  std::sort(staged.begin(), staged.end());
  std::vector<std::string> expected;
  for (const auto& e : fs::directory_iterator(package)) {
    const std::string name = e.path().filename();
    if (name.ends_with(".py") && name != "__main__.py") expected.push_back(name + "c");
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(staged, expected);

  std::string entry;
  for (const auto& e : fs::directory_iterator(cache_dir_)) {
    if (e.path().filename().string().rfind("package-", 0) == 0) entry = e.path();
  }
  ASSERT_FALSE(entry.empty()) << "no package entry in " << cache_dir_;
  const std::string stored = ReadFile(entry);
  std::string corrupt = stored;
  corrupt[corrupt.size() / 2] ^= 0x01;
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << corrupt;
  auto second = internal::TempDir::Create("codeact-oneshot-stage-");
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(internal::StageValidatorPackage(second->path(), package, true).ok());
  EXPECT_EQ(ReadFile(second->path() + "/validator/checker.pyc"),
            ReadFile(first->path() + "/validator/checker.pyc"));
  EXPECT_EQ(ReadFile(entry), stored) << "the corrupt entry was not replaced";

  const Status missing = internal::StageValidatorPackage(second->path(), cache_dir_, true);
  EXPECT_EQ(missing.code(), StatusCode::kNotFound) << missing.ToString();
}

TEST_F(CacheDirTest, TheInterpreterVersionIsAskedOnceForAnUnchangedFile) {
  const std::string python = internal::EmbeddedInstallationInterpreter();
  if (python.empty()) GTEST_SKIP() << "the build's interpreter is not installed here";
  auto version = InterpreterVersion(python);
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  const auto [major, minor] = internal::EmbeddedPythonVersion();
  EXPECT_EQ(version->major, major);
  EXPECT_EQ(version->minor, minor);
  std::string entry;
  for (const auto& e : fs::directory_iterator(cache_dir_)) {
    if (e.path().filename().string().rfind("interpreter-", 0) == 0) entry = e.path();
  }
  ASSERT_FALSE(entry.empty()) << "no interpreter entry in " << cache_dir_;
  // The entry is what answers now: a changed answer shows through...
  std::string text = ReadFile(entry);
  const std::string answer = std::to_string(major) + " " + std::to_string(minor) + "\n";
  ASSERT_EQ(text.substr(text.size() - answer.size()), answer);
  std::ofstream(entry, std::ios::trunc) << text.substr(0, text.size() - answer.size()) << "2 7\n";
  auto cached = InterpreterVersion(python);
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(cached->major, 2);
  // ...but not once the identity it records is not that of the file.
  std::ofstream(entry, std::ios::trunc)
      << "codeact-interpreter-version 1\n/elsewhere\n1 2 3\n2 7\n";
  auto asked = InterpreterVersion(python);
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->major, major);
  EXPECT_EQ(asked->minor, minor);
}

bj::value RunJson(const testing::ProgramRun& run) {
  try {
    return bj::parse(run.out.substr(run.out.find('{')));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a result: " << run.out << run.err;
    return nullptr;
  }
}

// With the per-user cache filled, a one-shot run needs no embedded interpreter at all: its child
// validates. A run whose embedded module cannot even be found still runs, and still rejects.
TEST_F(CacheDirTest, AOneShotRunWithTheCacheFilledNeedsNoEmbeddedInterpreter) {
  ASSERT_EQ(RunCli({"run", "-"}, "print(1)\n").exit_code, 0);  // fills the cache
  const std::vector<std::string> argv = {
      "/bin/sh", "-c", "CODEACT_PYTHON_MODULE=/nonexistent/codeact_python.so exec \"$0\" run -",
      CODEACT_BINARY};
  const auto ran = RunProgram(argv, "print(1)\n");
  ASSERT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  EXPECT_EQ(RunJson(ran).at("stdout").as_string(), "1\n");
  const auto refused = RunProgram(argv, "import subprocess\n");
  ASSERT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_EQ(RunJson(refused).at("outcome").as_string(), "validation_failed");
  // The flags that need the embedded validator in the host still fail without it, clearly.
  const auto unvalidated = RunProgram(
      {"/bin/sh", "-c",
       "CODEACT_PYTHON_MODULE=/nonexistent/codeact_python.so exec \"$0\" run --no-validate -",
       CODEACT_BINARY},
      "print(1)\n");
  EXPECT_EQ(unvalidated.exit_code, 2) << unvalidated.out;
  EXPECT_NE(unvalidated.err.find("codeact_python.so was not found"), std::string::npos)
      << unvalidated.err;
}

TEST(OneShotTest, ResultsNameTheDefaultInterpreterAndTheOneGiven) {
  const std::string python = internal::EmbeddedInstallationInterpreter();
  if (python.empty()) GTEST_SKIP() << "the build's interpreter is not installed here";
  const auto plain = RunCli({"run", "-"}, "print(1)\n");
  ASSERT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_EQ(RunJson(plain).at("interpreter").as_string(), python);
  EXPECT_NE(python.find("/bin/python3."), std::string::npos);

  // --python names another: a link to the same interpreter under another path.
  auto dir = internal::TempDir::Create("codeact-oneshot-python-");
  ASSERT_TRUE(dir.ok());
  ::chmod(dir->path().c_str(), 0755);
  const std::string link = dir->path() + "/python-link";
  fs::create_symlink(python, link);
  const auto chosen =
      RunCli({"run", "--isolation", "process", "--python", link, "-"}, "print(2)\n");
  ASSERT_EQ(chosen.exit_code, 0) << chosen.out << chosen.err;
  EXPECT_EQ(RunJson(chosen).at("interpreter").as_string(), link);
  EXPECT_EQ(RunJson(chosen).at("stdout").as_string(), "2\n");
}

// The processes of this host whose command line names a scratch directory of process `pid`
// (TempDir names carry their maker's pid: "<prefix><host id>.<pid>.<n>-...").
std::vector<std::string> ProcessesNaming(pid_t pid) {
  std::vector<std::string> found;
  const std::string mark = "." + std::to_string(pid) + ".";
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(e.path().string() + "/cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find("codeact-") != std::string::npos && cmdline.find(mark) != std::string::npos)
      found.push_back(name + ": " + cmdline);
  }
  return found;
}

// The child starts while the code is validated: a refused run must kill it and leave nothing.
TEST(OneShotTest, ARefusedRunLeavesNoProcessAndRunsNoCode) {
  // The shell prints the pid that `codeact run` then has (exec keeps it).
  const auto run = RunProgram({"/bin/sh", "-c", "echo $$; exec \"$0\" run -", CODEACT_BINARY},
                              "print('ran')\nimport subprocess\n");
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  const pid_t pid = std::atoi(run.out.c_str());
  ASSERT_GT(pid, 0) << run.out;
  const bj::value v = RunJson(run);
  EXPECT_EQ(v.at("outcome").as_string(), "validation_failed");
  EXPECT_EQ(v.at("stdout").as_string(), "") << "user code ran before the verdict";
  EXPECT_EQ(v.at("violations").at(0).at("rule").as_string(), "import-blocked");
  EXPECT_EQ(ProcessesNaming(pid), std::vector<std::string>{});
  for (const auto& e : fs::directory_iterator(internal::ScratchBaseDir())) {
    EXPECT_EQ(e.path().filename().string().find("." + std::to_string(pid) + "."), std::string::npos)
        << "left behind: " << e.path();
  }
}

// `codeact run` leaves the validation to its child (ExecutorOptions::validate_in_child): the
// verdict is the embedded validator's (`codeact validate`, same policy flags), at both levels,
// and a rejected program writes nothing, even to a read-write directory, before the violation.
TEST(OneShotTest, TheChildsVerdictIsTheEmbeddedValidatorsAndComesBeforeAnyCode) {
  auto work = internal::TempDir::Create("codeact-oneshot-work-");
  ASSERT_TRUE(work.ok());
  ::chmod(work->path().c_str(), 0777);
  const std::string code = testing::Program(
      "oneshot/the_childs_verdict_is_the_embedded_validators_and_comes_before_any_code");
  for (const std::vector<std::string>& policy :
       {std::vector<std::string>{}, {"--block-import", "json"}, {"--allow-import", "subprocess"}}) {
    std::vector<std::string> validate = {"validate"};
    validate.insert(validate.end(), policy.begin(), policy.end());
    validate.push_back("-");
    const auto expected = RunCli(validate, code);
    ASSERT_EQ(expected.exit_code, 1) << expected.out << expected.err;
    const bj::value report = bj::parse(expected.out);
    for (const char* level : {"process", "namespaces"}) {
      std::vector<std::string> run = {"run", "--isolation", level, "--workdir", work->path()};
      run.insert(run.end(), policy.begin(), policy.end());
      run.push_back("-");
      const auto got = RunCli(run, code);
      ASSERT_EQ(got.exit_code, 1) << got.out << got.err;
      const bj::value v = RunJson(got);
      EXPECT_EQ(v.at("outcome").as_string(), "validation_failed") << level;
      EXPECT_EQ(v.at("message").as_string(), "the code was rejected by the validator; nothing ran");
      EXPECT_EQ(v.at("violations"), report.at("violations")) << level << " " << got.out;
      EXPECT_EQ(v.at("stdout").as_string(), "") << "user code ran before the verdict";
      EXPECT_EQ(v.at("exit_code").as_int64(), -1);
      // Unlike the host's rejection, the child's names the interpreter that validated.
      EXPECT_TRUE(v.at("interpreter").is_string()) << level << " " << got.out;
      EXPECT_FALSE(fs::exists(work->path() + "/ran.txt")) << level;
    }
  }
}

// A program the child passes runs under the guard's import list the child computed from the
// policy sent: an import the policy's flags allow beyond the defaults (importlib) passes the
// guard's __import__ as well as the validator.
TEST(OneShotTest, AProgramTheChildPassesRunsUnderTheImportsOfThePolicy) {
  const std::string code = "import json, importlib\nprint(json.dumps([importlib.__name__]))\n";
  for (const char* level : {"process", "namespaces"}) {
    const auto got =
        RunCli({"run", "--isolation", level, "--allow-import", "importlib", "-"}, code);
    ASSERT_EQ(got.exit_code, 0) << got.out << got.err;
    EXPECT_EQ(RunJson(got).at("stdout").as_string(), "[\"importlib\"]\n") << level;
  }
}

}  // namespace
}  // namespace codeact
