// What the `codeact serve` HTTP tests share (serve_http_test.cpp, serve_own_server_test.cpp): two
// tokens, a fresh directory, and the body of an /execute request.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace codeact::serve_http_test {

namespace bj = boost::json;
namespace fs = std::filesystem;

inline const std::string kToken1 = "token-one-0123456789";
inline const std::string kToken2 = "token-two-9876543210";

inline fs::path FreshDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "tmp");
  fs::create_directories(dir / "out");
  return dir;
}

inline void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

inline std::string Execute(const std::string& code) {
  return bj::serialize(bj::object{{"code", code}});
}

}  // namespace codeact::serve_http_test
