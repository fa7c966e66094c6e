// Input files the user names are read only when they are regular files within a byte cap.
#include "files/bounded_read.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace codeact::internal {
namespace {

class BoundedReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("codeact-bounded-read-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& data) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }
  std::string dir_;
};

TEST_F(BoundedReadTest, ARegularFileWithinTheCapIsRead) {
  auto text = ReadBoundedFile(Write("a.py", "print(1)\n"), 100, "code file");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "print(1)\n");
  EXPECT_TRUE(ReadBoundedFile(Write("exact", std::string(100, 'x')), 100, "code file").ok());
}

TEST_F(BoundedReadTest, AFileOverTheCapIsRefusedNotCut) {
  auto text = ReadBoundedFile(Write("big", std::string(101, 'x')), 100, "tools file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            "tools file " + dir_ + "/big is larger than the limit of 100 bytes");
}

TEST_F(BoundedReadTest, DevicesDirectoriesAndFifosAreRefusedAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  auto zero = ReadBoundedFile("/dev/zero", 1 << 20, "code file");
  EXPECT_EQ(zero.status().message(),
            "code file /dev/zero is a character device, not a regular file");
  auto dir = ReadBoundedFile(dir_, 1 << 20, "code file");
  EXPECT_EQ(dir.status().message(), "code file " + dir_ + " is a directory, not a regular file");
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = ReadBoundedFile(fifo, 1 << 20, "policy file");  // no writer: reading would block
  EXPECT_EQ(from_fifo.status().message(), "policy file " + fifo + " is a FIFO, not a regular file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  auto missing = ReadBoundedFile(dir_ + "/missing", 10, "code file");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace codeact::internal
