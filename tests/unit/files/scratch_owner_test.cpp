// The sweep of scratch directories left by dead codeact processes: a live owner's are kept, a dead
// owner's go, and what is not surely ours (another namespace, another user, a symlink) is left.
#include "files/scratch_owner.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "files/mount_capture.hpp"

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;

class ScratchOwnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("codeact-sweep-test-" + std::to_string(::getpid()));
    fs::create_directories(base_);
    const char* old = std::getenv("TMPDIR");
    saved_ = old != nullptr ? std::optional<std::string>(old) : std::nullopt;
    ::setenv("TMPDIR", base_.c_str(), 1);
  }
  void TearDown() override {
    if (saved_) {
      ::setenv("TMPDIR", saved_->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
    fs::remove_all(base_);
  }
  std::string MakeDir(const std::string& name) {
    const std::string path = base_ + "/" + name;
    fs::create_directories(path + "/inner");
    std::ofstream(path + "/inner/file") << "left behind";
    return path;
  }

  std::string base_;
  std::optional<std::string> saved_;
};

TEST_F(ScratchOwnerTest, ALiveOwnersDirectoriesStayAndADeadOnesGo) {
  const std::string tag = ScratchOwnerTag();
  ASSERT_FALSE(tag.empty()) << "this process cannot name itself (no /proc?)";
  auto mine = TempDir::Create("codeact-run-");
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_EQ(fs::path(mine->path()).filename().string().rfind("codeact-run-" + tag, 0), 0u)
      << mine->path();

  // The same pid with another start time: a process that has died and whose pid was reused.
  const std::string key = tag.substr(1, tag.find('.') - 1);
  const std::string dead =
      MakeDir("codeact-run-o" + key + "." + std::to_string(::getpid()) + ".1-AbC123");
  const std::string dead_runner = MakeDir("codeact-runner-o" + key + ".999999999.5-xYz789");

  const ScratchSweep sweep = RemoveDeadScratch(base_);
  EXPECT_TRUE(fs::exists(mine->path()));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(dead_runner));
  EXPECT_EQ(sweep.removed.size(), 2u);
  EXPECT_TRUE(sweep.not_removed.empty());
}

TEST_F(ScratchOwnerTest, WhatIsNotSurelyADeadOwnersIsLeftAlone) {
  const std::string tag = ScratchOwnerTag();
  ASSERT_FALSE(tag.empty());
  const std::string key = tag.substr(1, tag.find('.') - 1);
  const std::string other_key = key == "00000000" ? "11111111" : "00000000";
  // Another boot or pid namespace: its /proc is not ours to judge by.
  const std::string foreign = MakeDir("codeact-run-o" + other_key + ".1.1-AbC123");
  // Names without a tag (an older codeact, or not ours at all).
  const std::string untagged = MakeDir("codeact-run-AbC123");
  // A symlink under a dead owner's name is not followed.
  const std::string outside = MakeDir("outside");
  const std::string link = base_ + "/codeact-run-o" + key + ".999999999.5-LnK000";
  fs::create_directory_symlink(outside, link);

  (void)RemoveDeadScratch(base_);
  EXPECT_TRUE(fs::exists(foreign));
  EXPECT_TRUE(fs::exists(untagged));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::exists(outside + "/inner/file"));

  if (::geteuid() == 0) {  // another user's directory under a dead owner's name stays theirs
    const std::string theirs = MakeDir("codeact-run-o" + key + ".999999999.6-UsR000");
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    (void)RemoveDeadScratch(base_);
    EXPECT_TRUE(fs::exists(theirs));
  } else {
    std::printf("note: not root, so the other-user case is not tried\n");
  }
}

}  // namespace
}  // namespace codeact::internal
