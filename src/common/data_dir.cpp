#include "common/data_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "codeact_build_config.hpp"

namespace codeact::internal {

std::string DefaultDataDir() {
  if (const char* env = std::getenv("CODEACT_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / kInstallDataSubdir;
    if (std::filesystem::exists(installed / "validator" / "__init__.py", ec)) {
      return installed.string();
    }
  }
  return kSourceDir;
}

}  // namespace codeact::internal
