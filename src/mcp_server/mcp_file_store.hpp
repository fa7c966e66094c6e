// McpFileStore: the captured files an MCP server keeps for `resources/read` after a tools/call
// returned them as `resource_link` content blocks. Files belong to the caller whose call captured
// them (the HTTP principal or token subject; stdio has one caller) and are read, listed and
// evicted per caller: no caller reaches or pushes out another's files, except through the
// server-wide byte cap.
//
// Bounds, oldest evicted first: `max_files_per_caller` and `max_bytes_per_caller` per caller,
// `max_total_bytes` for the whole server (then the oldest file of any caller goes), and `ttl`: a
// file is gone that long after it was kept. A file larger than a cap is not kept (Keep says so).
// URIs are "codeact://files/<32 random hex digits>/<file name>": unguessable, and checked
// against the owner anyway. Thread-safe; `now` is passed in so that tests drive the clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace codeact::internal {

struct McpFileStoreLimits {
  std::size_t max_files_per_caller = 256;
  std::size_t max_bytes_per_caller = 64u << 20;   // 64 MiB
  std::size_t max_total_bytes = 256u << 20;       // 256 MiB, all callers together
  std::chrono::milliseconds ttl{60 * 60 * 1000};  // 1 hour after the call that captured it
};

class McpFileStore {
 public:
  using Clock = std::chrono::steady_clock;

  // One kept file: what resources/list and resources/read say about it.
  struct Kept {
    std::string uri;
    std::string name;  // the path the code wrote, "/out/a.csv"
    std::string media_type;
    std::shared_ptr<const std::string> data;
    Clock::time_point expires;
  };

  explicit McpFileStore(McpFileStoreLimits limits = {}) : limits_(limits) {}

  const McpFileStoreLimits& limits() const { return limits_; }

  // Keeps `data` for `caller` and returns its URI; nothing when the file alone is over a cap.
  std::optional<std::string> Keep(const std::string& caller, const std::string& path,
                                  const std::string& media_type, std::string data,
                                  Clock::time_point now);

  // The caller's file at `uri`; nothing when it is unknown, expired, evicted or another's.
  std::optional<Kept> Read(const std::string& caller, const std::string& uri,
                           Clock::time_point now);

  // The caller's files, oldest first.
  std::vector<Kept> List(const std::string& caller, Clock::time_point now);

  // Bytes kept in all (for tests and metrics).
  std::size_t total_bytes();

 private:
  struct Entry {
    std::string owner;
    Kept file;
    std::uint64_t order = 0;  // when it was kept; lower is older
  };

  void ExpireLocked(Clock::time_point now);
  void EraseLocked(std::map<std::string, Entry>::iterator it);
  // The oldest file of `*owner` (null: of anyone).
  std::map<std::string, Entry>::iterator OldestLocked(const std::string* owner);

  const McpFileStoreLimits limits_;
  std::mutex mu_;
  std::map<std::string, Entry> by_uri_;
  std::map<std::string, std::size_t> caller_bytes_;
  std::map<std::string, std::size_t> caller_files_;
  std::size_t total_bytes_ = 0;
  std::uint64_t next_order_ = 0;
};

}  // namespace codeact::internal
