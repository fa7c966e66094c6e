#include "common/data_dir.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "codeact_build_config.hpp"
#include "os/path_within.hpp"

// Where the installation a program was built against is, when the program was configured with
// the installed package: codeactConfig.cmake generates a source file for each consumer that
// defines these (the package's location at the consumer's configure time, so a moved tree is
// found where it is now). Weak: absent in this build's own programs and in anything that links
// the library without the package's CMake config, where they stay null.
extern "C" {
__attribute__((weak)) extern const char* const codeact_installed_data_dir;
__attribute__((weak)) extern const char* const codeact_installed_libexec_dir;
}

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;

// The path a consumer's generated source gave, or empty.
std::string Installed(const char* const* symbol) {
  if (symbol == nullptr || *symbol == nullptr) return "";
  return *symbol;
}

// A data dir is usable when it holds the validator package; resources/ is installed beside it.
bool HasValidator(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "validator" / "__init__.py", ec);
}

}  // namespace

// In order: $CODEACT_DATA_DIR; <binary dir>/../share/codeact for an installed codeact; the
// installation a consumer was configured against (codeact_installed_data_dir above); the source
// tree for this build's own programs, so they never pick up an older installed copy; the
// configured install prefix for programs that link the installed library; the source tree.
std::string DefaultDataDir() {
  if (const char* env = std::getenv("CODEACT_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside_binary = exe.parent_path().parent_path() / kInstallDataSubdir;
    if (HasValidator(beside_binary)) return beside_binary.string();
    if (const std::string baked = Installed(&codeact_installed_data_dir);
        !baked.empty() && HasValidator(baked)) {
      return baked;
    }
    const fs::path build_dir = fs::weakly_canonical(kBinaryDir, ec);
    if (!ec && PathWithin(exe.native(), build_dir.native())) return kSourceDir;
  }
  if (HasValidator(kInstallDataDir)) return kInstallDataDir;
  return kSourceDir;
}

StatusOr<std::string> ResourceFile(const std::string& resource_dir, std::string_view name,
                                   std::string_view what) {
  const std::filesystem::path data_dir = resource_dir.empty() ? DefaultDataDir() : resource_dir;
  std::string path = (data_dir / "resources" / name).string();
  if (!resource_dir.empty() && std::filesystem::exists(data_dir / name)) {
    path = (data_dir / name).string();
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return NotFound(std::string(what) + " not found at " + path);
  }
  return path;
}

namespace {

// The first existing file among this build's own, the one installed next to the binary, the one
// of the installation a consumer was configured against, and the configured prefix's (and with
// `build_tree_last`, this build's own for any program, as DefaultDataDir ends with the source
// tree); only $`env` when that is set (a wrong path then shows, visibly).
std::string FindBuiltFile(const char* env, const char* name, bool executable,
                          bool build_tree_last) {
  std::error_code ec;
  std::vector<fs::path> candidates;
  if (const char* path = std::getenv(env); path != nullptr && *path != '\0') {
    candidates.push_back(path);
  } else {
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      const fs::path build_dir = fs::weakly_canonical(kBinaryDir, ec);
      if (!ec && PathWithin(exe.native(), build_dir.native()))
        candidates.push_back(build_dir / name);
      candidates.push_back(exe.parent_path().parent_path() / kInstallLibexecSubdir / name);
    }
    if (const std::string baked = Installed(&codeact_installed_libexec_dir); !baked.empty())
      candidates.push_back(fs::path(baked) / name);
    candidates.push_back(fs::path(kInstallLibexecDir) / name);
    if (build_tree_last) candidates.push_back(fs::path(kBinaryDir) / name);
  }
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c, ec) && (!executable || ::access(c.c_str(), X_OK) == 0))
      return c.string();
  }
  return "";
}

}  // namespace

std::string SandboxLauncherPath() {
  return FindBuiltFile("CODEACT_SANDBOX_LAUNCHER", "codeact-sandbox", true,
                       /*build_tree_last=*/false);
}

std::string GuardModulePath() {
  // Unlike the launcher, the guard is on by default: a program linking this build's library
  // from elsewhere (with nothing installed) uses this build's module rather than fail.
  return FindBuiltFile("CODEACT_GUARD_MODULE", "_codeact_guard.so", false,
                       /*build_tree_last=*/true);
}

std::string EmbeddedPythonModulePath() {
  return FindBuiltFile("CODEACT_PYTHON_MODULE", "codeact_python.so", false,
                       /*build_tree_last=*/true);
}

std::string EgressModulePath() {
  return FindBuiltFile("CODEACT_EGRESS_MODULE", "codeact_egress.so", false,
                       /*build_tree_last=*/true);
}

std::string EmbeddedInstallationInterpreter() {
  const std::string path = std::string(kEmbeddedPythonPrefix) + "/bin/python" +
                           std::to_string(kEmbeddedPythonMajor) + "." +
                           std::to_string(kEmbeddedPythonMinor);
  std::error_code ec;
  if (path[0] != '/' || !fs::is_regular_file(path, ec) || ::access(path.c_str(), X_OK) != 0)
    return "";
  return path;
}

std::pair<int, int> EmbeddedPythonVersion() { return {kEmbeddedPythonMajor, kEmbeddedPythonMinor}; }

}  // namespace codeact::internal
