// What the mount capture tests share (mount_capture_test.cpp, mount_capture_file_mounts_test.cpp,
// mount_capture_temp_dir_test.cpp): small file helpers and MountCaptureTest, a temporary
// directory with a read-write mount at /data and a directory outside it.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "codeact/json.hpp"
#include "files/mount_capture.hpp"

namespace codeact::internal::capture_test {
inline bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Writes through O_TRUNC so that an existing file keeps its inode.
inline void WriteFile(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  ASSERT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  ::close(fd);
}

inline std::string ReadFile(const std::string& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

inline void SetMtime(const std::string& path, time_t seconds, long nanoseconds) {
  const struct timespec times[2] = {{seconds, nanoseconds}, {seconds, nanoseconds}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0)
      << path << ": " << std::strerror(errno);
}

inline void MakeDir(const std::string& path) {
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0) << path << ": " << std::strerror(errno);
}

inline std::vector<std::string> Paths(const Capture& capture) {
  std::vector<std::string> out;
  for (const CapturedFile& file : capture.files) out.push_back(file.path);
  return out;
}

inline std::optional<std::string> ReasonFor(const Capture& capture, const std::string& path) {
  for (const OmittedFile& omitted : capture.omitted) {
    if (omitted.path == path) return omitted.reason;
  }
  return std::nullopt;
}

inline std::string Describe(const Capture& capture) {
  std::string out = "files:";
  for (const CapturedFile& f : capture.files) out += " " + f.path;
  out += "; omitted:";
  for (const OmittedFile& o : capture.omitted) out += " [" + o.path + ": " + o.reason + "]";
  return out;
}

class MountCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<TempDir> dir = TempDir::Create("codeact-capture-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(dir).value());
    mnt_ = dir_->path() + "/mnt";
    outside_ = dir_->path() + "/outside";
    MakeDir(mnt_);
    MakeDir(outside_);
    mounts_ = {FileMount{mnt_, "/data", MountMode::kReadWrite, 1 << 20}};
  }

  Capture Run(const MountSnapshot& before, const CaptureLimits& limits = {}) {
    return CaptureChanges(before, mounts_, limits);
  }

  std::optional<TempDir> dir_;
  std::string mnt_;
  std::string outside_;
  std::vector<FileMount> mounts_;
};

}  // namespace codeact::internal::capture_test
