// The child interpreter must speak the grammar the embedded validator parses.
//
// Asking an interpreter its version costs a whole interpreter start (~20 ms), which a one-shot
// `codeact run` would pay every time: the answer is kept in the per-user cache
// (common/user_cache.hpp), keyed by the interpreter's real path and its file's identity (device,
// inode, size, modification and change times), so a replaced or rebuilt interpreter is asked
// again. Only an ELF executable is cached: a script (a pyenv shim) picks its interpreter anew
// each time it runs.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include "codeact/validator.hpp"
#include "common/sha256.hpp"
#include "common/user_cache.hpp"
#include "process/helper_command.hpp"

namespace codeact {
namespace {

constexpr const char* kCacheMagic = "codeact-interpreter-version 1";

// The cache entry's name and the identity it must repeat; nullopt when the file cannot be read.
std::optional<std::pair<std::string, std::string>> CacheKey(const std::string& python_path) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(python_path, ec);
  struct stat st {};
  if (ec || ::stat(real.c_str(), &st) != 0) return std::nullopt;
  char magic[4] = {};
  std::ifstream(real, std::ios::binary).read(magic, sizeof magic);
  if (std::string_view(magic, 4) != std::string_view("\x7f"
                                                     "ELF",
                                                     4))
    return std::nullopt;
  std::ostringstream id;
  id << real.native() << '\n'
     << st.st_dev << ' ' << st.st_ino << ' ' << st.st_size << ' ' << st.st_mtim.tv_sec << '.'
     << st.st_mtim.tv_nsec << ' ' << st.st_ctim.tv_sec << '.' << st.st_ctim.tv_nsec;
  const std::string key = internal::Sha256Hex(id.str());
  return std::make_pair("interpreter-" + key.substr(0, 32), id.str());
}

StatusOr<PythonVersion> AskVersion(const std::string& python_path) {
  auto probe = internal::RunCommand({python_path, "-I", "-S", "-c",
                                     "import sys; print(sys.version_info[0], sys.version_info[1])"},
                                    "", std::chrono::seconds(10), 4096);
  if (!probe.ok())
    return FailedPrecondition("cannot run the child interpreter " + python_path + ": " +
                              probe.status().message());
  if (probe->timed_out || !probe->exit.exited || probe->exit.exit_code != 0) {
    return FailedPrecondition("the child interpreter " + python_path +
                              " failed to report its version");
  }
  std::istringstream in(probe->stdout_text);
  PythonVersion child;
  if (!(in >> child.major >> child.minor)) {
    return FailedPrecondition("the child interpreter " + python_path + " printed no version");
  }
  return child;
}

}  // namespace

StatusOr<PythonVersion> InterpreterVersion(const std::string& python_path) {
  const auto key = CacheKey(python_path);
  const std::optional<internal::UserCache> cache = key ? internal::UserCache::Open() : std::nullopt;
  if (cache) {
    // The entry repeats the identity it was made for: a hash collision of the name, or an entry
    // copied from elsewhere, is a miss.
    if (auto text = cache->Read(key->first, 8192)) {
      const std::string head = std::string(kCacheMagic) + "\n" + key->second + "\n";
      PythonVersion v;
      std::istringstream in(text->substr(std::min(head.size(), text->size())));
      if (text->compare(0, head.size(), head) == 0 && (in >> v.major >> v.minor) && v.major > 0)
        return v;
    }
  }
  auto asked = AskVersion(python_path);
  if (asked.ok() && cache) {
    cache->Write(key->first, std::string(kCacheMagic) + "\n" + key->second + "\n" +
                                 std::to_string(asked->major) + " " + std::to_string(asked->minor) +
                                 "\n");
  }
  return asked;
}

Status CheckInterpreterVersion(const std::string& python_path, PythonVersion embedded) {
  auto child = InterpreterVersion(python_path);
  if (!child.ok()) return child.status();
  if (!(*child == embedded)) {
    return FailedPrecondition(
        "the child interpreter " + python_path + " is Python " + std::to_string(child->major) +
        "." + std::to_string(child->minor) + " but the embedded validator is Python " +
        std::to_string(embedded.major) + "." + std::to_string(embedded.minor) +
        "; the grammar differs between minor versions, so use a " + std::to_string(embedded.major) +
        "." + std::to_string(embedded.minor) + " interpreter (--python)");
  }
  return Status::Ok();
}

Status CheckInterpreterMatches(Validator& validator, const std::string& python_path) {
  return CheckInterpreterVersion(python_path, validator.EmbeddedVersion());
}

}  // namespace codeact
