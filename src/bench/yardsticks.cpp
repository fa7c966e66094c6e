#include "bench/yardsticks.hpp"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace codeact::bench {

std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = dir + "/" + name;
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::vector<std::string> BwrapPrintArgv(const std::string& bwrap, const std::string& python) {
  return {bwrap,
          "--unshare-all",
          "--die-with-parent",
          "--ro-bind",
          "/usr",
          "/usr",
          "--symlink",
          "usr/bin",
          "/bin",
          "--symlink",
          "usr/lib",
          "/lib",
          "--symlink",
          "usr/lib64",
          "/lib64",
          "--symlink",
          "usr/sbin",
          "/sbin",
          "--proc",
          "/proc",
          "--dev",
          "/dev",
          "--tmpfs",
          "/tmp",
          "--chdir",
          "/tmp",
          python,
          "-I",
          "-S",
          "-c",
          "print(1)"};
}

}  // namespace codeact::bench
