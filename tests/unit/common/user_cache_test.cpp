// The per-user cache (common/user_cache.hpp) and its digest (common/sha256.hpp).
#include "common/user_cache.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/sha256.hpp"
#include "files/mount_capture.hpp"

namespace codeact::internal {
namespace {

// FIPS 180-2's examples, by the code Sha256 uses here (the CPU's SHA instructions where it has
// them) and by the portable code.
TEST(Sha256Test, KnownDigests) {
  for (auto* hex : {&Sha256Hex, &PortableSha256Hex}) {
    EXPECT_EQ(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // 56 bytes: the length no longer fits the first padding block.
    EXPECT_EQ(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(hex(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
}

// The CPU's SHA instructions and the portable code agree on every length around the block and
// padding boundaries, on random bytes.
TEST(Sha256Test, TheCpuInstructionsAgreeWithThePortableCode) {
  if (!Sha256UsesCpuInstructions()) GTEST_SKIP() << "this CPU has no SHA instructions";
  std::mt19937 random(15);
  std::string data;
  for (std::size_t length = 0; length <= 1100; ++length) {
    data.resize(length);
    for (char& c : data) c = static_cast<char>(random());
    ASSERT_EQ(Sha256Hex(data), PortableSha256Hex(data)) << length << " bytes";
  }
  data.resize(3 << 20);
  for (char& c : data) c = static_cast<char>(random());
  EXPECT_EQ(Sha256Hex(data), PortableSha256Hex(data));
}

// Points the cache at a fresh directory for one test, and back afterwards.
class UserCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("codeact-cache-test-");
    ASSERT_TRUE(dir.ok());
    base_.emplace(std::move(*dir));
    ::chmod(base_->path().c_str(), 0755);
    cache_dir_ = base_->path() + "/codeact";
    const char* old = std::getenv("CODEACT_CACHE_DIR");
    if (old != nullptr) old_ = old;
    ::setenv("CODEACT_CACHE_DIR", cache_dir_.c_str(), 1);
  }
  void TearDown() override {
    if (old_) {
      ::setenv("CODEACT_CACHE_DIR", old_->c_str(), 1);
    } else {
      ::unsetenv("CODEACT_CACHE_DIR");
    }
  }
  std::optional<TempDir> base_;
  std::string cache_dir_;
  std::optional<std::string> old_;
};

TEST_F(UserCacheTest, WritesAndReadsAnEntry) {
  auto cache = UserCache::Open();
  ASSERT_TRUE(cache.has_value());
  EXPECT_EQ(cache->dir(), cache_dir_);
  ASSERT_TRUE(cache->Write("entry-1", "hello"));
  EXPECT_EQ(cache->Read("entry-1", 100), "hello");
  EXPECT_EQ(cache->Read("entry-1", 4), std::nullopt) << "larger than the cap";
  EXPECT_EQ(cache->Read("missing", 100), std::nullopt);
  struct stat st {};
  ASSERT_EQ(::stat((cache_dir_ + "/entry-1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  cache->Remove("entry-1");
  EXPECT_EQ(cache->Read("entry-1", 100), std::nullopt);
}

TEST_F(UserCacheTest, NamesThatCouldLeaveTheDirectoryAreRefused) {
  auto cache = UserCache::Open();
  ASSERT_TRUE(cache.has_value());
  EXPECT_FALSE(cache->Write("../escape", "x"));
  EXPECT_FALSE(cache->Write(".hidden", "x"));
  EXPECT_FALSE(cache->Write("a/b", "x"));
  EXPECT_FALSE(std::filesystem::exists(base_->path() + "/escape"));
}

TEST_F(UserCacheTest, AnEntryOthersCanWriteOrASymlinkIsAMiss) {
  auto cache = UserCache::Open();
  ASSERT_TRUE(cache.has_value());
  ASSERT_TRUE(cache->Write("shared", "value"));
  ::chmod((cache_dir_ + "/shared").c_str(), 0666);
  EXPECT_EQ(cache->Read("shared", 100), std::nullopt);
  std::ofstream(base_->path() + "/target") << "planted";
  std::filesystem::create_symlink(base_->path() + "/target", cache_dir_ + "/linked");
  EXPECT_EQ(cache->Read("linked", 100), std::nullopt);
}

TEST_F(UserCacheTest, ADirectoryOthersCanWriteIsNotUsed) {
  ASSERT_TRUE(UserCache::Open().has_value());
  ::chmod(cache_dir_.c_str(), 0777);
  EXPECT_FALSE(UserCache::Open().has_value());
  ::chmod(cache_dir_.c_str(), 0755);
  ::chmod(base_->path().c_str(), 0777);  // its parent, too
  EXPECT_FALSE(UserCache::Open().has_value());
  ::chmod(base_->path().c_str(), 0755);
}

TEST_F(UserCacheTest, AnEntryOfAnotherOwnerIsAMiss) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another owner";
  auto cache = UserCache::Open();
  ASSERT_TRUE(cache.has_value());
  ASSERT_TRUE(cache->Write("foreign", "value"));
  ASSERT_EQ(::chown((cache_dir_ + "/foreign").c_str(), 65534, 65534), 0);
  EXPECT_EQ(cache->Read("foreign", 100), std::nullopt);
}

// A linked file is the entry's inode, holding the content asked for: written when absent, and
// rewritten (a new inode) when the entry was tampered with, so a changed entry is never linked.
TEST_F(UserCacheTest, LinksAnEntryHoldingTheContentAndRewritesOneThatDiffers) {
  auto cache = UserCache::Open();
  ASSERT_TRUE(cache.has_value());
  const std::string first = base_->path() + "/first.pyc";
  ASSERT_TRUE(cache->LinkEntry("pyc-a", "bytecode", first));
  struct stat entry {};
  struct stat linked {};
  ASSERT_EQ(::stat((cache_dir_ + "/pyc-a").c_str(), &entry), 0);
  ASSERT_EQ(::stat(first.c_str(), &linked), 0);
  EXPECT_EQ(entry.st_ino, linked.st_ino);
  EXPECT_EQ(entry.st_mode & 0777, 0644u);
  EXPECT_EQ(cache->Read("pyc-a", 100), "bytecode");

  std::ofstream(cache_dir_ + "/pyc-a", std::ios::trunc) << "tampered";  // through `first` too
  const std::string second = base_->path() + "/second.pyc";
  ASSERT_TRUE(cache->LinkEntry("pyc-a", "bytecode", second));
  std::ifstream in(second);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "bytecode");
  ASSERT_EQ(::stat(second.c_str(), &linked), 0);
  EXPECT_NE(linked.st_ino, entry.st_ino) << "the tampered inode was linked";

  EXPECT_FALSE(cache->LinkEntry("pyc-a", "bytecode", second)) << "an existing name is kept";
  EXPECT_FALSE(cache->LinkEntry("../pyc-a", "bytecode", base_->path() + "/third.pyc"));
}

// Written one by one, far enough apart for the file system's clock to tell them apart.
void WriteApart(const UserCache& cache, const std::vector<std::string>& names,
                const std::string& content = "x") {
  for (const auto& name : names) {
    ASSERT_TRUE(cache.Write(name, content));
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
  }
}

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.insert(e.path().filename().string());
  return names;
}

TEST_F(UserCacheTest, PruningPastTheEntryBoundKeepsTheEntriesLastWrittenOrLinked) {
  auto cache = UserCache::Open();
  ASSERT_TRUE(cache.has_value());
  WriteApart(*cache, {"a", "b", "c", "d", "e", "f"});
  cache->Prune({.entries = 8, .bytes = 1 << 20});
  EXPECT_EQ(Names(cache_dir_).size(), 6u) << "within its bounds, nothing goes";
  // Linking "a" into a private directory makes it the most recently used.
  ASSERT_TRUE(cache->LinkEntry("a", "x", base_->path() + "/a.pyc"));
  cache->Prune({.entries = 4, .bytes = 1 << 20});
  EXPECT_EQ(Names(cache_dir_), (std::set<std::string>{"a", "e", "f"}));
  EXPECT_EQ(cache->Read("a", 10), "x");
}

TEST_F(UserCacheTest, PruningPastTheByteBoundRemovesTheOldestBytes) {
  auto cache = UserCache::Open();
  ASSERT_TRUE(cache.has_value());
  WriteApart(*cache, {"old", "mid", "new"}, std::string(400, 'x'));
  cache->Prune({.entries = 100, .bytes = 1000});
  EXPECT_EQ(Names(cache_dir_), (std::set<std::string>{"new"})) << "750 bytes at most are kept";
}

TEST_F(UserCacheTest, AWritersTemporaryFileIsRemovedAfterAnHour) {
  auto cache = UserCache::Open();
  ASSERT_TRUE(cache.has_value());
  std::ofstream(cache_dir_ + "/.tmp-dead01") << "half";
  std::ofstream(cache_dir_ + "/.tmp-live01") << "half";
  const timespec two_hours_ago[2] = {{::time(nullptr) - 7200, 0}, {::time(nullptr) - 7200, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (cache_dir_ + "/.tmp-dead01").c_str(), two_hours_ago, 0), 0);
  cache->Prune(CacheBounds{});
  EXPECT_EQ(Names(cache_dir_), (std::set<std::string>{".tmp-live01"})) << "one may be written now";
}

// The first write of a process prunes to the default bounds, which a directory grown past them
// (entries of earlier builds) is brought back within. In a process of its own (the death test's
// re-executed binary, which has written nothing yet), which reports what it found.
TEST_F(UserCacheTest, AProcesssFirstWriteBringsAnOvergrownDirectoryWithinTheDefaultBounds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const CacheBounds defaults;
  ASSERT_EXIT(
      {
        if (!UserCache::Open().has_value()) std::_Exit(2);
        for (std::size_t i = 0; i <= defaults.entries; ++i)
          std::ofstream(cache_dir_ + "/old-" + std::to_string(i)) << "x";
        std::this_thread::sleep_for(std::chrono::milliseconds(15));
        const bool written = UserCache::Open()->Write("new", "y");
        const std::set<std::string> left = Names(cache_dir_);
        std::filesystem::remove_all(base_->path());  // the child's own, made by its SetUp
        std::fprintf(stderr, "written=%d new=%zu left=%zu\n", written ? 1 : 0, left.count("new"),
                     left.size());
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0),
      "written=1 new=1 left=" + std::to_string(defaults.entries / 4 * 3) + "\n");
}

TEST_F(UserCacheTest, AnEmptyLocationDisablesTheCache) {
  ::setenv("CODEACT_CACHE_DIR", "", 1);
  EXPECT_FALSE(UserCache::Open().has_value());
}

}  // namespace
}  // namespace codeact::internal
