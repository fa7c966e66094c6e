#include "backends/local/runner_files.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "codeact/validator.hpp"
#include "codeact_build_config.hpp"
#include "common/sha256.hpp"
#include "common/user_cache.hpp"
#include "files/bounded_read.hpp"
#include "validation/bytecode.hpp"

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;

// The runner's modules (resources/runner.py imports the others from its own directory).
constexpr const char* kRunnerModules[] = {"runner",      "codeact_protocol", "codeact_convert",
                                          "runner_cold", "runner_zygote",    "runner_session"};
constexpr std::size_t kModuleCount = std::size(kRunnerModules);
constexpr const char* kCacheMagic = "codeact-runner-cache 1";
constexpr std::size_t kMaxSourceBytes = 1 << 20;
constexpr std::size_t kMaxEntryBytes = 8 << 20;

struct Sources {
  std::vector<std::string> text;  // by kRunnerModules
  std::string key;                // sha256 of the sources and the bytecode's version
};

StatusOr<Sources> ReadSources(const fs::path& dir) {
  Sources s;
  std::string keyed = std::string(kCacheMagic) + "\n" + kEmbeddedPythonVersion + "\n";
  for (const char* module : kRunnerModules) {
    const fs::path path = dir / (std::string(module) + ".py");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) return NotFound("cannot read " + path.string());
    if (text.str().size() > kMaxSourceBytes)
      return InvalidArgument(path.string() + " is too large");
    keyed += std::string(module) + " " + std::to_string(text.str().size()) + "\n" + text.str();
    s.text.push_back(text.str());
  }
  s.key = Sha256Hex(keyed);
  return s;
}

std::string EntryName(const std::string& key) { return "runner-" + key.substr(0, 32); }

// entry: "<magic> <key>\n", then per module "<name> <size> <sha256>\n", then the bytes of each.
std::string EncodeEntry(const std::string& key, const std::vector<std::string>& pyc) {
  std::string out = std::string(kCacheMagic) + " " + key + "\n";
  for (std::size_t i = 0; i < kModuleCount; ++i) {
    out += std::string(kRunnerModules[i]) + " " + std::to_string(pyc[i].size()) + " " +
           Sha256Hex(pyc[i]) + "\n";
  }
  for (const auto& p : pyc) out += p;
  return out;
}

// The .pyc of each module when `entry` is for `key` and every module matches its hash.
std::optional<std::vector<std::string>> DecodeEntry(const std::string& key,
                                                    const std::string& entry) {
  std::istringstream in(entry);
  std::string line;
  if (!std::getline(in, line) || line != std::string(kCacheMagic) + " " + key) return std::nullopt;
  std::vector<std::pair<std::size_t, std::string>> sizes;
  for (const char* module : kRunnerModules) {
    std::string name, hash;
    std::size_t size = 0;
    if (!std::getline(in, line)) return std::nullopt;
    std::istringstream fields(line);
    if (!(fields >> name >> size >> hash) || name != module || size > kMaxEntryBytes)
      return std::nullopt;
    sizes.emplace_back(size, hash);
  }
  std::size_t offset = static_cast<std::size_t>(in.tellg());
  std::vector<std::string> pyc;
  for (const auto& [size, hash] : sizes) {
    if (offset > entry.size() || entry.size() - offset < size) return std::nullopt;
    pyc.push_back(entry.substr(offset, size));
    offset += size;
    if (Sha256Hex(pyc.back()) != hash) return std::nullopt;
  }
  if (offset != entry.size()) return std::nullopt;
  return pyc;
}

// Every module compiled by the embedded interpreter; empty when one fails.
std::vector<std::string> Compile(const fs::path& source_dir) {
  if (!Validator::Embedded().ok()) return {};
  std::vector<std::string> compiled;
  for (const char* module : kRunnerModules) {
    auto pyc = CompileToPyc((source_dir / (std::string(module) + ".py")).string());
    if (!pyc.ok()) return {};
    compiled.push_back(std::move(*pyc));
  }
  return compiled;
}

}  // namespace

StatusOr<std::string> RunnerCacheEntryName(const std::string& runner) {
  auto sources = ReadSources(fs::path(runner).parent_path());
  if (!sources.ok()) return sources.status();
  return EntryName(sources->key);
}

StatusOr<std::optional<TempDir>> PrivateRunnerDir(std::string& runner,
                                                  const RunnerFilesOptions& options) {
  const fs::path source_dir = fs::path(runner).parent_path();
  std::vector<std::string> compiled;
  auto sources = ReadSources(source_dir);
  std::optional<UserCache> cache;
  if (options.use_cache && sources.ok()) cache = UserCache::Open();
  if (cache) {
    if (auto entry = cache->Read(EntryName(sources->key), kMaxEntryBytes)) {
      if (auto pyc = DecodeEntry(sources->key, *entry)) compiled = std::move(*pyc);
    }
  }
  if (compiled.empty()) {
    compiled = Compile(source_dir);
    if (cache && !compiled.empty()) {
      (void)cache->Write(EntryName(sources->key), EncodeEntry(sources->key, compiled));
    }
  }
  if (compiled.empty() && !options.runtime_guard) return std::optional<TempDir>();
  auto dir = TempDir::Create("codeact-runner-");
  if (!dir.ok())
    return options.runtime_guard ? StatusOr<std::optional<TempDir>>(dir.status())
                                 : std::optional<TempDir>();
  for (std::size_t i = 0; i < kModuleCount; ++i) {
    const std::string name = kRunnerModules[i];
    const std::string path = dir->path() + "/" + name + (compiled.empty() ? ".py" : ".pyc");
    std::error_code written;
    if (compiled.empty()) {
      fs::copy_file(source_dir / (name + ".py"), path, written);
    } else {
      std::ofstream out(path, std::ios::binary);
      out.write(compiled[i].data(), static_cast<std::streamsize>(compiled[i].size()));
      out.close();
      if (!out.good()) written = std::make_error_code(std::errc::io_error);
    }
    if (written && options.runtime_guard)
      return Internal("cannot write the runner to " + path + ": " + written.message());
    if (written) return std::optional<TempDir>();
  }
  runner = dir->path() + (compiled.empty() ? "/runner.py" : "/runner.pyc");
  return std::optional<TempDir>(std::move(*dir));
}

}  // namespace codeact::internal
