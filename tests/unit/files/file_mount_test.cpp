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

TEST_F(FileMountValidateTest, AcceptsARegularFileAsAFileMount) {
  const std::string file = root_ + "/config.json";
  std::ofstream(file) << "{}";
  StatusOr<FileMount> mount = ValidateMount({file, "data/config.json", MountMode::kReadOnly});
  ASSERT_TRUE(mount.ok()) << mount.status().ToString();
  EXPECT_EQ(mount->kind, MountKind::kFile);
  EXPECT_EQ(mount->host_path, RealPath(file));
  EXPECT_EQ(mount->mount_path, "/data/config.json");
  // A directory is a directory mount, whatever the caller said.
  FileMount dir{root_, "/d"};
  dir.kind = MountKind::kFile;
  StatusOr<FileMount> checked = ValidateMount(dir);
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  EXPECT_EQ(checked->kind, MountKind::kDirectory);
}

TEST_F(FileMountValidateTest, AFileNamedWithATrailingSlashIsRefused) {
  const std::string file = root_ + "/file.txt";
  std::ofstream(file) << "x";
  StatusOr<FileMount> mount = ValidateMount({file + "/", "/data/file.txt"});
  ASSERT_FALSE(mount.ok());
  EXPECT_EQ(mount.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mount.status().message(),
            "mount host path \"" + file + "/\" ends in \"/\" but names a file, not a directory");
}

TEST_F(FileMountValidateTest, SpecialFilesAreRefusedByType) {
  const std::string fifo = root_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, type] :
       {std::pair<std::string, std::string>{fifo, "FIFO"}, {"/dev/null", "character device"}}) {
    StatusOr<FileMount> mount = ValidateMount({path, "/data/x"});
    ASSERT_FALSE(mount.ok()) << path;
    EXPECT_EQ(mount.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(mount.status().message(), "mount host path \"" + path + "\" is a " + type +
                                            ", not a directory or a regular file");
  }
}

TEST_F(FileMountValidateTest, ASymlinkToAFileIsRefused) {
  const std::string file = root_ + "/file.txt";
  std::ofstream(file) << "x";
  const std::string link = root_ + "/link.txt";
  ASSERT_EQ(::symlink(file.c_str(), link.c_str()), 0);
  StatusOr<FileMount> mount = ValidateMount({link, "/data/file.txt"});
  ASSERT_FALSE(mount.ok());
  EXPECT_NE(mount.status().message().find("is a symlink; name the real directory or file"),
            std::string::npos)
      << mount.status().message();
}

// Validated mounts as CheckMountLayout sees them.
FileMount Made(std::string host, std::string path, MountKind kind,
               MountMode mode = MountMode::kReadOnly) {
  FileMount m{std::move(host), std::move(path), mode};
  m.kind = kind;
  return m;
}

TEST(FileMountLayoutTest, FileMountsBesideOthersAreFine) {
  using K = MountKind;
  EXPECT_TRUE(CheckMountLayout({}).ok());
  EXPECT_TRUE(CheckMountLayout({Made("/h/d", "/data", K::kDirectory),
                                Made("/h/d/a.json", "/config/a.json", K::kFile),
                                Made("/h/b.json", "/config/b.json", K::kFile),
                                Made("/h/c.json", "/data-c.json", K::kFile)})
                  .ok());
  // A read-write file inside a read-only directory's host tree: writable as asked.
  EXPECT_TRUE(CheckMountLayout({Made("/h/d", "/data", K::kDirectory),
                                Made("/h/d/a.json", "/a.json", K::kFile, MountMode::kReadWrite)})
                  .ok());
}

TEST(FileMountLayoutTest, LayoutsThatCannotBeShownAreRefused) {
  using K = MountKind;
  EXPECT_EQ(
      CheckMountLayout({Made("/h/a", "/data", K::kFile), Made("/h/b", "/data", K::kDirectory)})
          .message(),
      "two mounts at /data");
  EXPECT_EQ(CheckMountLayout({Made("/h/a.json", "/data/a.json", K::kFile),
                              Made("/h/d", "/data/a.json/d", K::kDirectory)})
                .message(),
            "mount path /data/a.json/d is beneath the file mount /data/a.json: a file holds no "
            "entries");
  EXPECT_EQ(CheckMountLayout(
                {Made("/h/d", "/data", K::kDirectory), Made("/h/a.json", "/data/a.json", K::kFile)})
                .message(),
            "file mount /data/a.json is beneath the mount /data: its mount point would have to "
            "be made in /h/d; mount the file elsewhere");
  EXPECT_EQ(CheckMountLayout({Made("/h/d", "/out", K::kDirectory, MountMode::kReadWrite),
                              Made("/h/d/sub/a.json", "/a.json", K::kFile)})
                .message(),
            "read-only file mount /a.json (/h/d/sub/a.json) is writable through the read-write "
            "mount /out");
  EXPECT_EQ(CheckMountLayout({Made("/h/a.json", "/rw.json", K::kFile, MountMode::kReadWrite),
                              Made("/h/a.json", "/ro.json", K::kFile)})
                .message(),
            "read-only file mount /ro.json (/h/a.json) is writable through the read-write mount "
            "/rw.json");
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

TEST(FileMountTest, KindNames) {
  EXPECT_EQ(MountKindName(MountKind::kDirectory), "directory");
  EXPECT_EQ(MountKindName(MountKind::kFile), "file");
}

TEST(FileMountTest, ModeNames) {
  EXPECT_EQ(MountModeName(MountMode::kReadWrite), "rw");
  EXPECT_EQ(MountModeName(MountMode::kReadOnly), "ro");
}

}  // namespace
}  // namespace codeact
