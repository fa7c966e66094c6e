// The hyperlight backend's inputs and late outputs (issue 21), through the fake SDK
// (tests/fakes): several input directories merged flat under /input, a name in two refused, a
// symlink inside an input refused, a new sandbox when an input changes, files that land in
// /output after the run returns awaited only when the option asks; and a tool coroutine never
// awaited reported in the result's message, as on the local backend.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "backends/hyperlight/input_staging.hpp"
#include "codeact/hyperlight_provider.hpp"
#include "codeact/json.hpp"
#include "files/mount_capture.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

const std::string kFakeSdk = std::string(CODEACT_SOURCE_DIR) + "/tests/fakes";

std::shared_ptr<CodeActProvider> FakeProvider(ProviderOptions options) {
  options.executor.hyperlight.sdk_path = kFakeSdk;
  options.validate = false;  // the tests use threading and os inside the fake's guest
  auto provider = HyperlightCodeActProvider::Create(std::move(options));
  if (!provider.ok()) throw std::runtime_error(provider.status().ToString());
  return *provider;
}

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

class HyperlightInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = internal::TempDir::Create("codeact-test-");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    a_ = fs::path(dir_->path()) / "a";
    b_ = fs::path(dir_->path()) / "b";
    fs::create_directories(a_ / "sub");
    fs::create_directories(b_);
    WriteFile(a_ / "one.txt", "one");
    WriteFile(a_ / "sub" / "deep.txt", "deep");
    WriteFile(b_ / "two.txt", "two");
  }
  std::optional<internal::TempDir> dir_;
  fs::path a_, b_;
};

TEST_F(HyperlightInputsTest, SeveralInputsAreMergedFlat) {
  ProviderOptions o;
  o.executor.hyperlight.input_dir = a_.string();
  o.executor.hyperlight.input_dirs = {b_.string()};
  auto p = FakeProvider(o);
  const ExecutionResult r =
      p->Execute("print(open('/input/one.txt').read() + open('/input/two.txt').read())");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "onetwo\n");
  // Not the host's own directory: the guest reads a staged copy.
  const ExecutionResult where = p->Execute("fake_input_dir");
  ASSERT_EQ(where.outcome, Outcome::kOk) << where.message << where.stderr_text;
  EXPECT_EQ(where.output_json.find(a_.string()), std::string::npos) << where.output_json;
}

TEST_F(HyperlightInputsTest, ANameInTwoInputsIsRefused) {
  WriteFile(b_ / "one.txt", "other");
  ProviderOptions o;
  o.executor.hyperlight.input_dirs = {a_.string(), b_.string()};
  const ExecutionResult r = FakeProvider(o)->Execute("print(1)");
  EXPECT_EQ(r.outcome, Outcome::kSetupError);
  EXPECT_EQ(r.stdout_text, "");
  EXPECT_NE(
      r.message.find("input name \"one.txt\" is in both " + a_.string() + " and " + b_.string()),
      std::string::npos)
      << r.message;
}

TEST_F(HyperlightInputsTest, ASymlinkInsideAnInputIsRefused) {
  for (const fs::path& link : {a_ / "secret", a_ / "sub" / "secret"}) {
    fs::create_symlink("/etc/passwd", link);
    ProviderOptions o;
    o.executor.hyperlight.input_dir = a_.string();
    const ExecutionResult r = FakeProvider(o)->Execute("print(open('/input/one.txt').read())");
    EXPECT_EQ(r.outcome, Outcome::kSetupError) << link;
    EXPECT_NE(r.message.find("input " + link.string() + " is a symlink"), std::string::npos)
        << r.message;
    fs::remove(link);
  }
}

TEST_F(HyperlightInputsTest, AChangedInputBuildsANewSandbox) {
  ProviderOptions o;
  o.executor.hyperlight.input_dir = a_.string();
  auto p = FakeProvider(o);
  const std::string code = "[open('/input/one.txt').read(), fake_sandbox_id]";
  const ExecutionResult first = p->Execute(code);
  ASSERT_EQ(first.outcome, Outcome::kOk) << first.message << first.stderr_text;
  const ExecutionResult again = p->Execute(code);
  ASSERT_EQ(again.outcome, Outcome::kOk) << again.message;
  const bj::array before = bj::parse(first.output_json).as_array();
  EXPECT_EQ(before.at(0), "one");
  EXPECT_EQ(bj::parse(again.output_json), bj::parse(first.output_json)) << "reused while unchanged";

  WriteFile(a_ / "one.txt", "changed, and longer");
  const ExecutionResult after = p->Execute(code);
  ASSERT_EQ(after.outcome, Outcome::kOk) << after.message << after.stderr_text;
  const bj::array now = bj::parse(after.output_json).as_array();
  EXPECT_EQ(now.at(0), "changed, and longer");
  EXPECT_NE(now.at(1), before.at(1)) << "a new sandbox for the new inputs";
}

// The guest writes its file from a thread a moment after the run returns (the fake runs the code
// in the worker process, whose working directory holds /output's host directory).
const char* kLateWriter =
    "import os, threading\n"
    "path = os.path.join(os.getcwd(), 'output', 'late.txt')\n"
    "def write():\n"
    "    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)\n"
    "    os.write(fd, b'late')\n"
    "    os.close(fd)\n"
    "threading.Timer(%s, write).start()\n"
    "print('/output/late.txt comes later')\n";

std::string LateWriter(const char* delay_s) {
  char code[1024];
  std::snprintf(code, sizeof code, kLateWriter, delay_s);
  return code;
}

TEST_F(HyperlightInputsTest, LateOutputFilesAreAwaitedWhenAsked) {
  ProviderOptions o;
  o.executor.hyperlight.late_output_wait_ms = 20'000;
  auto p = FakeProvider(o);
  const ExecutionResult r = p->Execute(LateWriter("0.3"));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  ASSERT_EQ(r.files.size(), 1u) << ToJson(r);
  EXPECT_EQ(r.files[0].path, "/output/late.txt");
  EXPECT_EQ(r.files[0].data, "late");
}

TEST_F(HyperlightInputsTest, LateOutputFilesAreNotAwaitedByDefault) {
  auto p = FakeProvider({});
  const ExecutionResult r = p->Execute(LateWriter("10"));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_TRUE(r.files.empty()) << ToJson(r);
  EXPECT_LT(r.duration_ms, 10'000);

  ProviderOptions bad;
  bad.executor.hyperlight.late_output_wait_ms = kMaxLateOutputWaitMs + 1;
  const ExecutionResult refused = FakeProvider(bad)->Execute("print(1)");
  EXPECT_EQ(refused.outcome, Outcome::kSetupError);
  EXPECT_NE(refused.message.find("late_output_wait_ms must be from 0 to 30000"), std::string::npos)
      << refused.message;
}

TEST_F(HyperlightInputsTest, AToolCoroutineNeverAwaitedIsReportedInTheMessage) {
  auto p = FakeProvider({});
  HostTool add;
  add.name = "add";
  add.handler = [](const std::string&) { return ToolResult::Success("3"); };
  ASSERT_TRUE(p->AddTool(add).ok());
  const ExecutionResult r = p->Execute("r = add(a=1, b=2)\nprint(type(r).__name__)");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "coroutine\n");
  EXPECT_EQ(r.tool_calls, 0);
  EXPECT_EQ(r.message.rfind("1 tool call(s) never ran because their coroutine was not awaited: "
                            "add on line 1; add await",
                            0),
            0u)
      << r.message;
}

// The staging itself, without a worker: what is copied, and what leaves nothing behind.
TEST_F(HyperlightInputsTest, StagingCopiesTheTopLevelFilesOnly) {
  auto staged = internal::StageInputs({a_.string(), b_.string()});
  ASSERT_TRUE(staged.ok()) << staged.status().message();
  const fs::path dir = (*staged)->dir.path();
  EXPECT_TRUE(fs::is_regular_file(dir / "one.txt"));
  EXPECT_TRUE(fs::is_regular_file(dir / "two.txt"));
  EXPECT_FALSE(fs::exists(dir / "sub"));
  EXPECT_EQ((*staged)->files, 2);
  EXPECT_EQ((*staged)->bytes, 6);
  auto signature = internal::InputSignature({a_.string(), b_.string()});
  ASSERT_TRUE(signature.ok());
  EXPECT_EQ(*signature, (*staged)->signature);
  WriteFile(b_ / "two.txt", "2");
  EXPECT_NE(*internal::InputSignature({a_.string(), b_.string()}), (*staged)->signature);
  const fs::path path = dir;
  staged->reset();
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace codeact
