#include "codeact/file_mount.hpp"

#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "files/mount_capture.hpp"

namespace codeact {
namespace {

using internal::TempDir;

std::string RealPath(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) != nullptr ? std::string(buffer) : std::string();
}

struct GoodCase {
  std::string input;
  std::string expected;
};

TEST(FileMountTest, NormaliseAcceptsAndNormalises) {
  const std::vector<GoodCase> cases = {
      {"/data", "/data"},
      {"data", "/data"},
      {"/data/out", "/data/out"},
      {"/data/out/", "/data/out"},
      {"//data///out//", "/data/out"},
      {"\\data\\out", "/data/out"},
      {"C\\work\\out", "/C/work/out"},
      {"./data", "/data"},
      {"/a/./b/.", "/a/b"},
      {"/a..b/c", "/a..b/c"},
      {"/...", "/..."},
      {"/.hidden", "/.hidden"},
      {"/with space/ünïcode", "/with space/ünïcode"},
  };
  for (const GoodCase& c : cases) {
    StatusOr<std::string> got = NormaliseMountPath(c.input);
    ASSERT_TRUE(got.ok()) << "input \"" << c.input << "\": " << got.status().ToString();
    EXPECT_EQ(*got, c.expected) << "input \"" << c.input << "\"";
  }
}

TEST(FileMountTest, NormaliseRejects) {
  const std::vector<std::string> cases = {
      "",
      "/",
      "//",
      "\\",
      ".",
      "./",
      "/./.",
      "..",
      "/..",
      "/a/../b",
      "a/..",
      "..\\etc",
      "/a/b/..",
      std::string("/a\0b", 4),
      "/a\nb",
      "/a\tb",
      "/a\x7f",
      "/a\x01",
      std::string(PATH_MAX + 1, 'a'),
  };
  for (const std::string& input : cases) {
    StatusOr<std::string> got = NormaliseMountPath(input);
    EXPECT_FALSE(got.ok()) << "input \"" << input << "\" gave \"" << (got.ok() ? *got : "") << "\"";
    if (!got.ok()) {
      EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << input;
    }
  }
}

TEST(FileMountTest, NormaliseMessagesSayWhy) {
  EXPECT_NE(NormaliseMountPath("/a/../b").status().message().find(".."), std::string::npos);
  EXPECT_NE(NormaliseMountPath("").status().message().find("empty"), std::string::npos);
  EXPECT_NE(NormaliseMountPath("/").status().message().find("root"), std::string::npos);
  EXPECT_NE(NormaliseMountPath(std::string("a\0", 2)).status().message().find("NUL"),
            std::string::npos);
  EXPECT_NE(NormaliseMountPath("a\n").status().message().find("control character"),
            std::string::npos);
}

class FileMountValidateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<TempDir> dir = TempDir::Create("codeact-mount-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(dir).value());
    root_ = dir_->path();
  }
  std::optional<TempDir> dir_;
  std::string root_;
};

TEST_F(FileMountValidateTest, AcceptsDirectoryAndStoresRealPath) {
  ASSERT_EQ(::mkdir((root_ + "/out").c_str(), 0755), 0);
  StatusOr<FileMount> mount =
      ValidateMount({root_ + "/out/", "data\\out/", MountMode::kReadOnly, 42});
  ASSERT_TRUE(mount.ok()) << mount.status().ToString();
  EXPECT_EQ(mount->host_path, RealPath(root_ + "/out"));
  EXPECT_EQ(mount->host_path.back(), 't');
  EXPECT_EQ(mount->mount_path, "/data/out");
  EXPECT_EQ(mount->mode, MountMode::kReadOnly);
  EXPECT_EQ(mount->write_bytes_limit, 42);
}

TEST_F(FileMountValidateTest, ResolvesSymlinkedParentToRealPath) {
  ASSERT_EQ(::mkdir((root_ + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((root_ + "/real/out").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((root_ + "/real").c_str(), (root_ + "/alias").c_str()), 0);
  StatusOr<FileMount> mount = ValidateMount({root_ + "/alias/out", "/out"});
  ASSERT_TRUE(mount.ok()) << mount.status().ToString();
  EXPECT_EQ(mount->host_path, RealPath(root_ + "/real/out"));
}

TEST_F(FileMountValidateTest, MissingIsNotFound) {
  const std::string missing = root_ + "/nope";
  StatusOr<FileMount> mount = ValidateMount({missing, "/data"});
  ASSERT_FALSE(mount.ok());
  EXPECT_EQ(mount.status().code(), StatusCode::kNotFound);
  EXPECT_NE(mount.status().message().find(missing), std::string::npos) << mount.status().message();
  EXPECT_NE(mount.status().message().find("does not exist"), std::string::npos);
}

TEST_F(FileMountValidateTest, FileIsNotADirectory) {
  const std::string file = root_ + "/file.txt";
  std::ofstream(file) << "x";
  StatusOr<FileMount> mount = ValidateMount({file, "/data"});
  ASSERT_FALSE(mount.ok());
  EXPECT_EQ(mount.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mount.status().message().find(file), std::string::npos);
  EXPECT_NE(mount.status().message().find("not a directory"), std::string::npos);
}

TEST_F(FileMountValidateTest, SymlinkIsRejectedWithOrWithoutTrailingSlash) {
  ASSERT_EQ(::mkdir((root_ + "/target").c_str(), 0755), 0);
  const std::string link = root_ + "/link";
  ASSERT_EQ(::symlink((root_ + "/target").c_str(), link.c_str()), 0);
  for (const std::string& path : {link, link + "/", link + "//"}) {
    StatusOr<FileMount> mount = ValidateMount({path, "/data"});
    ASSERT_FALSE(mount.ok()) << path;
    EXPECT_EQ(mount.status().code(), StatusCode::kInvalidArgument) << path;
    EXPECT_NE(mount.status().message().find("symlink"), std::string::npos)
        << mount.status().message();
    EXPECT_NE(mount.status().message().find(link), std::string::npos);
  }
}

TEST_F(FileMountValidateTest, RejectsBadMountPathAndLimit) {
  StatusOr<FileMount> bad_path = ValidateMount({root_, "/a/../b"});
  ASSERT_FALSE(bad_path.ok());
  EXPECT_EQ(bad_path.status().code(), StatusCode::kInvalidArgument);

  StatusOr<FileMount> zero = ValidateMount({root_, "/data", MountMode::kReadWrite, 0});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("write_bytes_limit"), std::string::npos);

  StatusOr<FileMount> negative = ValidateMount({root_, "/data", MountMode::kReadWrite, -1});
  EXPECT_FALSE(negative.ok());

  StatusOr<FileMount> empty = ValidateMount({"", "/data"});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);

  StatusOr<FileMount> nul = ValidateMount({std::string("/tmp\0x", 6), "/data"});
  ASSERT_FALSE(nul.ok());
  EXPECT_EQ(nul.status().code(), StatusCode::kInvalidArgument);
}

TEST(FileMountTest, ModeNames) {
  EXPECT_EQ(MountModeName(MountMode::kReadWrite), "rw");
  EXPECT_EQ(MountModeName(MountMode::kReadOnly), "ro");
}

}  // namespace
}  // namespace codeact
