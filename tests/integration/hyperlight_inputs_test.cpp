// The hyperlight guest's /input, staged (backends/hyperlight/staged_inputs.hpp), and /output read
// late: several inputs merged flat, names given twice, symlinks, subdirectories and the bounds
// refused, a new sandbox when the contents change, late output files awaited when asked.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>

#include "files/mount_capture.hpp"
#include "testing/hyperlight_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
using testing::FakeProvider;
using testing::MakeDir;
using testing::Unvalidated;
using testing::WriteFile;

class HyperlightInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = internal::TempDir::Create("codeact-test-");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  std::string Path(const std::string& name) const { return dir_->path() + "/" + name; }

  // The result of one run of `code` with these inputs.
  ExecutionResult RunWith(std::vector<std::string> inputs, const std::string& code) {
    ProviderOptions o = Unvalidated();
    o.executor.hyperlight.inputs = std::move(inputs);
    return FakeProvider(o)->Execute(code);
  }

  std::optional<internal::TempDir> dir_;
};

TEST_F(HyperlightInputsTest, DirectoriesAndFilesAreMergedFlatAndNamedInTheDescription) {
  WriteFile(MakeDir(Path("a")) + "/one.txt", "1");
  WriteFile(MakeDir(Path("b")) + "/two.txt", "22");
  WriteFile(Path("three.csv"), "333");
  ProviderOptions o = Unvalidated();
  o.executor.hyperlight.inputs = {Path("a"), Path("b"), Path("three.csv")};
  auto p = FakeProvider(o);
  const ExecutionResult r =
      p->Execute("[open('/input/' + n).read() for n in ('one.txt', 'two.txt', 'three.csv')]");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(bj::parse(r.output_json), bj::parse(R"(["1", "22", "333"])"));

  const std::string description = p->ToolDescription(p->Snapshot());
  EXPECT_NE(description.find("/input (read-only): 3 input file(s) from the host: one.txt, "
                             "three.csv, two.txt"),
            std::string::npos)
      << description;
  EXPECT_EQ(description.find(dir_->path()), std::string::npos) << description;
}

TEST_F(HyperlightInputsTest, WhatCannotBeStagedFlatIsRefusedNamingThePath) {
  WriteFile(MakeDir(Path("a")) + "/same.txt", "a");
  WriteFile(MakeDir(Path("b")) + "/same.txt", "b");
  const ExecutionResult twice = RunWith({Path("a"), Path("b")}, "print(1)");
  EXPECT_EQ(twice.outcome, Outcome::kSetupError);
  EXPECT_NE(twice.message.find("both give /input/same.txt"), std::string::npos) << twice.message;

  MakeDir(Path("nested/sub"));
  const ExecutionResult nested = RunWith({Path("nested")}, "print(1)");
  EXPECT_EQ(nested.outcome, Outcome::kSetupError);
  EXPECT_NE(nested.message.find(Path("nested/sub") + " is a directory"), std::string::npos)
      << nested.message;

  // A link inside an input, and an input that is a link: neither is followed.
  WriteFile(Path("secret.txt"), "host secret");
  MakeDir(Path("linked"));
  ASSERT_EQ(::symlink(Path("secret.txt").c_str(), Path("linked/innocent.txt").c_str()), 0);
  for (const std::string& input : {Path("linked"), Path("linked/innocent.txt")}) {
    const ExecutionResult link = RunWith({input}, "print(open('/input/innocent.txt').read())");
    EXPECT_EQ(link.outcome, Outcome::kSetupError) << input;
    EXPECT_NE(link.message.find("is a symlink"), std::string::npos) << link.message;
    EXPECT_EQ(link.stdout_text.find("host secret"), std::string::npos);
  }
  ASSERT_EQ(::symlink(Path("a").c_str(), Path("dir-link").c_str()), 0);
  const ExecutionResult dir_link = RunWith({Path("dir-link")}, "print(1)");
  EXPECT_EQ(dir_link.outcome, Outcome::kSetupError);
  EXPECT_NE(dir_link.message.find("symlink"), std::string::npos) << dir_link.message;

  const ExecutionResult missing = RunWith({Path("missing")}, "print(1)");
  EXPECT_EQ(missing.outcome, Outcome::kSetupError);
  EXPECT_NE(missing.message.find(Path("missing")), std::string::npos) << missing.message;
}

TEST_F(HyperlightInputsTest, TheBoundsOnFilesAndBytesAreEnforced) {
  WriteFile(MakeDir(Path("in")) + "/x.bin", std::string(3000, 'x'));
  WriteFile(Path("in/y.bin"), std::string(3000, 'y'));
  ProviderOptions o = Unvalidated();
  o.executor.hyperlight.inputs = {Path("in")};
  o.executor.hyperlight.max_input_files = 1;
  const ExecutionResult files = FakeProvider(o)->Execute("print(1)");
  EXPECT_EQ(files.outcome, Outcome::kSetupError);
  EXPECT_NE(files.message.find("more than 1 files"), std::string::npos) << files.message;

  o.executor.hyperlight.max_input_files = 10;
  o.executor.hyperlight.max_input_bytes = 5000;
  const ExecutionResult bytes = FakeProvider(o)->Execute("print(1)");
  EXPECT_EQ(bytes.outcome, Outcome::kSetupError);
  EXPECT_NE(bytes.message.find("more than 5000 bytes"), std::string::npos) << bytes.message;

  o.executor.hyperlight.max_input_bytes = 6000;
  EXPECT_EQ(FakeProvider(o)->Execute("print(1)").outcome, Outcome::kOk);
}

TEST_F(HyperlightInputsTest, ChangedContentsAreStagedAgainIntoANewSandbox) {
  WriteFile(MakeDir(Path("in")) + "/data.txt", "one");
  ProviderOptions o = Unvalidated();
  o.executor.hyperlight.inputs = {Path("in")};
  auto p = FakeProvider(o);
  const std::string code = "[open('/input/data.txt').read(), fake_sandbox_id]";
  const ExecutionResult first = p->Execute(code);
  ASSERT_EQ(first.outcome, Outcome::kOk) << first.message << first.stderr_text;
  const ExecutionResult again = p->Execute(code);
  ASSERT_EQ(again.outcome, Outcome::kOk) << again.message;
  EXPECT_EQ(bj::parse(again.output_json), bj::parse(first.output_json)) << "unchanged: warm";

  WriteFile(Path("in/data.txt"), "two!");
  WriteFile(Path("in/new.txt"), "new");
  const ExecutionResult changed = p->Execute(
      "[open('/input/data.txt').read(), open('/input/new.txt').read(), "
      "fake_sandbox_id]");
  ASSERT_EQ(changed.outcome, Outcome::kOk) << changed.message << changed.stderr_text;
  const bj::array got = bj::parse(changed.output_json).as_array();
  EXPECT_EQ(got.at(0).as_string(), "two!");
  EXPECT_EQ(got.at(1).as_string(), "new");
  EXPECT_NE(got.at(2), bj::parse(first.output_json).as_array().at(1)) << "a new sandbox";
  EXPECT_NE(p->ToolDescription(p->Snapshot()).find("2 input file(s)"), std::string::npos);
}

TEST_F(HyperlightInputsTest, TheGuestReadsAStagedCopyThatChangesOnlyWithTheSignature) {
  const std::string file = MakeDir(Path("in")) + "/data.txt";
  WriteFile(file, "aaaa");
  ProviderOptions o = Unvalidated();
  o.executor.hyperlight.inputs = {Path("in")};
  auto p = FakeProvider(o);
  ASSERT_EQ(p->Execute("open('/input/data.txt').read()").output_json, "\"aaaa\"");
  // Rewritten in place with the same size, and its modification time put back: the signature
  // (size, mtime, inode) is unchanged, so the guest still reads the copy staged before. This is
  // the documented limit of change detection, and shows that the guest never reads the host file.
  struct stat before {};
  ASSERT_EQ(::stat(file.c_str(), &before), 0);
  WriteFile(file, "bbbb");
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
  EXPECT_EQ(p->Execute("open('/input/data.txt').read()").output_json, "\"aaaa\"");
}

TEST_F(HyperlightInputsTest, LateOutputFilesAreAwaitedOnlyWhenAsked) {
  const std::string code = "fake_write_later('late.txt', 'late', 0.3)\nprint('ran')";
  ProviderOptions o = Unvalidated();
  const ExecutionResult at_once = FakeProvider(o)->Execute(code);
  ASSERT_EQ(at_once.outcome, Outcome::kOk) << at_once.message << at_once.stderr_text;
  EXPECT_TRUE(at_once.files.empty()) << "read at once: the file was not there yet";

  o.executor.hyperlight.output_wait_ms = 2000;
  const ExecutionResult waited = FakeProvider(o)->Execute(code);
  ASSERT_EQ(waited.outcome, Outcome::kOk) << waited.message << waited.stderr_text;
  ASSERT_EQ(waited.files.size(), 1u);
  EXPECT_EQ(waited.files[0].path, "/output/late.txt");
  EXPECT_EQ(waited.files[0].data, "late");

  o.executor.hyperlight.output_wait_ms = ExecutorOptions{}.hyperlight.kMaxOutputWaitMs + 1;
  EXPECT_FALSE(HyperlightCodeActProvider::Create(o).ok());
}

}  // namespace
}  // namespace codeact
