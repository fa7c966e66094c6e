#include "backends/local/runner_files.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
#include <vector>

#include "codeact/validator.hpp"
#include "codeact_build_config.hpp"
#include "common/sha256.hpp"
#include "common/user_cache.hpp"
#include "os/errno_status.hpp"
#include "validation/bytecode.hpp"

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;

// The runner's modules (resources/runner.py imports the others from its own directory).
constexpr const char* kRunnerModules[] = {"runner",          "runner_state",   "codeact_protocol",
                                          "codeact_convert", "runner_cold",    "runner_zygote",
                                          "runner_session",  "runner_verdict", "runner_curated"};
constexpr std::size_t kMaxSourceBytes = 1 << 20;
constexpr std::size_t kMaxEntryBytes = 8 << 20;
constexpr std::size_t kMaxPackageModules = 64;

// Modules staged and cached together: the runner's, or the validator package's.
struct ModuleSet {
  std::string_view magic;       // an entry's first word, and part of its key
  std::string_view entry_name;  // the cache entry is <entry_name>-<key>
  fs::path source_dir;
  std::string subdir;                // where they go in the private directory ("" or a package's)
  std::vector<std::string> modules;  // names without ".py"
};

ModuleSet RunnerSet(const fs::path& source_dir) {
  return {"codeact-runner-cache 1", "runner", source_dir, "",
          std::vector<std::string>(std::begin(kRunnerModules), std::end(kRunnerModules))};
}

// The package's modules, sorted: every <identifier>.py but __main__ (nothing a child runs).
StatusOr<ModuleSet> PackageSet(const fs::path& dir, std::string name) {
  ModuleSet set{"codeact-package-cache 1", "package", dir, std::move(name), {}};
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return NotFound("the " + set.subdir + " package is not at " + dir.string());
  while (const dirent* e = readdir(d)) {
    const std::string_view file = e->d_name;
    if (!file.ends_with(".py")) continue;
    const std::string module(file.substr(0, file.size() - 3));
    const bool identifier =
        !module.empty() && !std::isdigit(static_cast<unsigned char>(module[0])) &&
        std::all_of(module.begin(), module.end(),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (identifier && module != "__main__") set.modules.push_back(module);
  }
  closedir(d);
  std::sort(set.modules.begin(), set.modules.end());
  if (std::find(set.modules.begin(), set.modules.end(), "__init__") == set.modules.end())
    return NotFound("the " + set.subdir + " package is not at " + dir.string());
  if (set.modules.size() > kMaxPackageModules)
    return InvalidArgument("the " + set.subdir + " package at " + dir.string() +
                           " has more modules than the runner stages");
  return set;
}

// The set's cache key: the bytecode's version and each source's identity as `stat` gives it (its
// device, inode, size, and modification and change times in nanoseconds), as CPython's own .pyc
// check does with a source's mtime and size: any write to a source, or a source replaced, makes a
// new key, and no source is read on a hit. (A hash of the sources' bytes was ~0.15 ms of a one
// shot's path for the runner's, ~0.3 ms for the validator package's, on the test VM.)
StatusOr<std::string> SourcesKey(const ModuleSet& set) {
  std::string keyed =
      std::string(set.magic) + "\n" + kEmbeddedPythonVersion + "\n" + set.subdir + "\n";
  for (const std::string& module : set.modules) {
    const fs::path path = set.source_dir / (module + ".py");
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("runner source " + path.string(), errno);
    if (!S_ISREG(st.st_mode))
      return InvalidArgument("runner source " + path.string() + " is not a file");
    if (static_cast<std::size_t>(st.st_size) > kMaxSourceBytes) {
      return InvalidArgument("runner source " + path.string() + " is larger than " +
                             std::to_string(kMaxSourceBytes) + " bytes");
    }
    keyed += module + " " + std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
             std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ctim.tv_sec) + "." +
             std::to_string(st.st_ctim.tv_nsec) + "\n";
  }
  return Sha256Hex(keyed);
}

std::string EntryName(const ModuleSet& set, const std::string& key) {
  return std::string(set.entry_name) + "-" + key.substr(0, 32);
}

// entry: "<magic> <key>\n", then per module "<name> <size> <sha256>\n", then the bytes of each.
std::string EncodeEntry(const ModuleSet& set, const std::string& key,
                        const std::vector<std::string_view>& pyc) {
  std::string out = std::string(set.magic) + " " + key + "\n";
  for (std::size_t i = 0; i < set.modules.size(); ++i) {
    out += set.modules[i] + " " + std::to_string(pyc[i].size()) + " " + Sha256Hex(pyc[i]) + "\n";
  }
  for (const auto& p : pyc) out += p;
  return out;
}

// The next "\n"-ended line of `text` from `at`.
std::optional<std::string_view> Line(std::string_view text, std::size_t& at) {
  const std::size_t end = text.find('\n', at);
  if (end == std::string_view::npos) return std::nullopt;
  const std::string_view line = text.substr(at, end - at);
  at = end + 1;
  return line;
}

// The .pyc of each module (views into `entry`) when `entry` is for `key` and every module matches
// its hash; `hashes` gets those hashes (views into `entry` too).
std::optional<std::vector<std::string_view>> DecodeEntry(const ModuleSet& set,
                                                         const std::string& key,
                                                         std::string_view entry,
                                                         std::vector<std::string_view>& hashes) {
  std::size_t at = 0;
  const auto header = Line(entry, at);
  if (!header || *header != std::string(set.magic) + " " + key) return std::nullopt;
  std::vector<std::pair<std::size_t, std::string_view>> sizes;
  for (const std::string& module : set.modules) {
    const auto line = Line(entry, at);
    if (!line) return std::nullopt;
    // "<name> <size> <64 hex digits>"
    const std::size_t first = line->find(' ');
    const std::size_t second = line->find(' ', first == std::string_view::npos ? 0 : first + 1);
    if (first == std::string_view::npos || second == std::string_view::npos ||
        line->substr(0, first) != module || line->size() - second - 1 != 64)
      return std::nullopt;
    std::size_t size = 0;
    for (char c : line->substr(first + 1, second - first - 1)) {
      if (c < '0' || c > '9' || size > kMaxEntryBytes) return std::nullopt;
      size = size * 10 + static_cast<std::size_t>(c - '0');
    }
    sizes.emplace_back(size, line->substr(second + 1));
  }
  std::vector<std::string_view> pyc;
  for (const auto& [size, hash] : sizes) {
    if (entry.size() - at < size) return std::nullopt;
    pyc.push_back(entry.substr(at, size));
    at += size;
    if (Sha256Hex(pyc.back()) != hash) return std::nullopt;
  }
  if (at != entry.size()) return std::nullopt;
  hashes.clear();
  for (const auto& [size, hash] : sizes) hashes.push_back(hash);
  return pyc;
}

// Every module compiled by the embedded interpreter; empty when one fails.
std::vector<std::string> Compile(const ModuleSet& set) {
  if (!Validator::Embedded().ok()) return {};
  std::vector<std::string> compiled;
  for (const std::string& module : set.modules) {
    auto pyc = CompileToPyc((set.source_dir / (module + ".py")).string());
    if (!pyc.ok()) return {};
    compiled.push_back(std::move(*pyc));
  }
  return compiled;
}

// A set's bytecode, from the cache or compiled now (and then cached); `compiled` is empty when
// it could not be compiled. The views point into `entry` or `fresh`; `hashes` are the sha256 of
// each of `compiled` where the entry said (verified), empty after a compile.
struct SetBytecode {
  std::optional<std::string> entry;
  std::vector<std::string> fresh;
  std::vector<std::string_view> compiled;
  std::vector<std::string_view> hashes;
};

void LoadBytecode(const ModuleSet& set, const std::optional<UserCache>& cache, SetBytecode& out) {
  auto key = SourcesKey(set);
  if (cache && key.ok()) {
    out.entry = cache->Read(EntryName(set, *key), kMaxEntryBytes);
    if (out.entry) {
      if (auto pyc = DecodeEntry(set, *key, *out.entry, out.hashes)) {
        out.compiled = std::move(*pyc);
      }
    }
  }
  if (!out.compiled.empty()) return;
  out.fresh = Compile(set);
  out.compiled.assign(out.fresh.begin(), out.fresh.end());
  if (cache && key.ok() && !out.compiled.empty()) {
    (void)cache->Write(EntryName(set, *key), EncodeEntry(set, *key, out.compiled));
  }
}

// The set's files in `dir` (its .pyc, or its sources where it could not be compiled). With the
// cache each .pyc is a hard link to an entry named by its hash (UserCache::LinkEntry): only where
// no run can write the cache (RunnerFilesOptions::use_cache), so none can write its link either.
Status WriteSet(const std::string& dir, const ModuleSet& set, const SetBytecode& code,
                const std::optional<UserCache>& cache) {
  const std::string to = set.subdir.empty() ? dir : dir + "/" + set.subdir;
  std::error_code made;
  if (!set.subdir.empty() && !fs::create_directory(to, made) && made)
    return Internal("cannot create " + to + ": " + made.message());
  for (std::size_t i = 0; i < set.modules.size(); ++i) {
    const std::string& name = set.modules[i];
    const std::string path = to + "/" + name + (code.compiled.empty() ? ".py" : ".pyc");
    std::error_code written;
    if (cache && !code.compiled.empty() &&
        cache->LinkEntry(
            "pyc-" + (code.hashes.size() == code.compiled.size() ? std::string(code.hashes[i])
                                                                 : Sha256Hex(code.compiled[i])),
            code.compiled[i], path)) {
      continue;
    }
    if (code.compiled.empty()) {
      fs::copy_file(set.source_dir / (name + ".py"), path, written);
    } else {
      std::ofstream out(path, std::ios::binary);
      out.write(code.compiled[i].data(), static_cast<std::streamsize>(code.compiled[i].size()));
      out.close();
      if (!out.good()) written = std::make_error_code(std::errc::io_error);
    }
    if (written) return Internal("cannot write the runner to " + path + ": " + written.message());
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> RunnerCacheEntryName(const std::string& runner) {
  const ModuleSet set = RunnerSet(fs::path(runner).parent_path());
  auto key = SourcesKey(set);
  if (!key.ok()) return key.status();
  return EntryName(set, *key);
}

StatusOr<std::optional<TempDir>> PrivateRunnerDir(std::string& runner,
                                                  const RunnerFilesOptions& options) {
  const ModuleSet set = RunnerSet(fs::path(runner).parent_path());
  std::optional<UserCache> cache;
  if (options.use_cache) cache = UserCache::Open();
  SetBytecode code;
  LoadBytecode(set, cache, code);
  if (code.compiled.empty() && !options.required) return std::optional<TempDir>();
  auto dir = TempDir::Create("codeact-runner-");
  if (!dir.ok())
    return options.required ? StatusOr<std::optional<TempDir>>(dir.status())
                            : std::optional<TempDir>();
  if (Status s = WriteSet(dir->path(), set, code, cache); !s.ok()) {
    if (options.required) return s;
    return std::optional<TempDir>();
  }
  runner = dir->path() + (code.compiled.empty() ? "/runner.py" : "/runner.pyc");
  return std::optional<TempDir>(std::move(*dir));
}

Status StageValidatorPackage(const std::string& dir, const std::string& package_dir,
                             bool use_cache) {
  auto set = PackageSet(package_dir, "validator");
  if (!set.ok()) return set.status();
  std::optional<UserCache> cache;
  if (use_cache) cache = UserCache::Open();
  SetBytecode code;
  LoadBytecode(*set, cache, code);
  return WriteSet(dir, *set, code, cache);
}

}  // namespace codeact::internal
