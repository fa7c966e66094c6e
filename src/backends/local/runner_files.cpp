#include "backends/local/runner_files.hpp"

#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
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
    StatusOr<std::string> text = ReadBoundedFile(path.string(), kMaxSourceBytes, "runner source");
    if (!text.ok()) return text.status();
    keyed +=
        std::string(module) + " " + std::to_string(text->size()) + " " + Sha256Hex(*text) + "\n";
    s.text.push_back(std::move(*text));
  }
  s.key = Sha256Hex(keyed);
  return s;
}

std::string EntryName(const std::string& key) { return "runner-" + key.substr(0, 32); }

// entry: "<magic> <key>\n", then per module "<name> <size> <sha256>\n", then the bytes of each.
std::string EncodeEntry(const std::string& key, const std::vector<std::string_view>& pyc) {
  std::string out = std::string(kCacheMagic) + " " + key + "\n";
  for (std::size_t i = 0; i < kModuleCount; ++i) {
    out += std::string(kRunnerModules[i]) + " " + std::to_string(pyc[i].size()) + " " +
           Sha256Hex(pyc[i]) + "\n";
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
// its hash.
std::optional<std::vector<std::string_view>> DecodeEntry(const std::string& key,
                                                         std::string_view entry) {
  std::size_t at = 0;
  const auto header = Line(entry, at);
  if (!header || *header != std::string(kCacheMagic) + " " + key) return std::nullopt;
  std::vector<std::pair<std::size_t, std::string_view>> sizes;
  for (const char* module : kRunnerModules) {
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
  std::vector<std::string_view> compiled;  // into `entry` or `fresh`
  std::optional<std::string> entry;
  std::vector<std::string> fresh;
  auto sources = ReadSources(source_dir);
  std::optional<UserCache> cache;
  if (options.use_cache && sources.ok()) cache = UserCache::Open();
  if (cache) {
    entry = cache->Read(EntryName(sources->key), kMaxEntryBytes);
    if (entry) {
      if (auto pyc = DecodeEntry(sources->key, *entry)) compiled = std::move(*pyc);
    }
  }
  if (compiled.empty()) {
    fresh = Compile(source_dir);
    compiled.assign(fresh.begin(), fresh.end());
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
