// The "list /" probe's judgement: the sandbox's own entries (its skeleton, and the directories on
// the way to an interpreter installed outside the system paths) are not the host's.
#include "selftest/isolation_probes.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;

// What the probe's code prints: its interpreter, then each entry of / with its own entries.
std::string Report(const std::string& exe, const std::vector<std::vector<std::string>>& dirs) {
  std::string out = std::string("exe") + '\0' + exe + "\n";
  for (const auto& d : dirs) {
    out += "dir";
    for (const auto& name : d) out += '\0' + name;
    out += "\n";
  }
  return out;
}

class RootJudgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("codeact-root-judge-" + std::to_string(::getpid()));
    for (const char* d : {"bin", "usr", "etc", "root/.pyenv/versions/3.11.9", "srv"})
      fs::create_directories(root_ / d);
    std::ofstream(root_ / "root/.bashrc") << "secret";
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(RootJudgeTest, TheWayToAPyenvInterpreterIsTheSandboxsOwn) {
  const std::string exe = "/root/.pyenv/versions/3.11.9/bin/python3.11";
  const ProbeVerdict v =
      JudgeRootListing(Report(exe, {{"bin"}, {"root", ".pyenv"}, {"usr", "lib"}}), true, root_);
  EXPECT_TRUE(v.contained) << v.observed;
  EXPECT_EQ(v.observed, "sees ['bin', 'root', 'usr']");
}

TEST_F(RootJudgeTest, MoreOfTheHostsDirectoryThanTheWayIsTheHosts) {
  const std::string exe = "/root/.pyenv/versions/3.11.9/bin/python3.11";
  const ProbeVerdict v =
      JudgeRootListing(Report(exe, {{"bin"}, {"root", ".bashrc", ".pyenv"}}), true, root_);
  EXPECT_FALSE(v.contained);
  EXPECT_EQ(v.observed, "sees the host's /root");
}

TEST_F(RootJudgeTest, AHostEntryOffTheWayIsTheHosts) {
  const ProbeVerdict v =
      JudgeRootListing(Report("/usr/bin/python3.11", {{"bin"}, {"srv"}}), true, root_);
  EXPECT_FALSE(v.contained);
  EXPECT_EQ(v.observed, "sees the host's /srv");
  // /root seen whole, by an interpreter that does not live there: the host's.
  const ProbeVerdict root =
      JudgeRootListing(Report("/usr/bin/python3.11", {{"root", ".pyenv"}}), true, root_);
  EXPECT_FALSE(root.contained);
}

}  // namespace
}  // namespace codeact::internal
