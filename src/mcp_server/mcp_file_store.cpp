// McpFileStore (mcp_file_store.hpp).
#include "mcp_server/mcp_file_store.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/secure_random.hpp"

namespace codeact::internal {
namespace {

// The last part of `path`, percent-encoded where a URI path segment needs it.
std::string UriName(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string out;
  for (unsigned char c : base) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out.empty() ? "file" : out;
}

}  // namespace

std::optional<std::string> McpFileStore::Keep(const std::string& caller, const std::string& path,
                                              const std::string& media_type, std::string data,
                                              Clock::time_point now) {
  const std::size_t size = data.size();
  if (size > limits_.max_bytes_per_caller || size > limits_.max_total_bytes ||
      limits_.max_files_per_caller == 0) {
    return std::nullopt;
  }
  std::lock_guard lock(mu_);
  ExpireLocked(now);
  while (caller_files_[caller] >= limits_.max_files_per_caller ||
         caller_bytes_[caller] + size > limits_.max_bytes_per_caller) {
    EraseLocked(OldestLocked(&caller));
  }
  while (total_bytes_ + size > limits_.max_total_bytes) EraseLocked(OldestLocked(nullptr));
  Entry e;
  e.owner = caller;
  e.order = next_order_++;
  e.file.uri = "codeact://files/" + SecureRandomHex(16) + "/" + UriName(path);
  e.file.name = path;
  e.file.media_type = media_type;
  e.file.data = std::make_shared<const std::string>(std::move(data));
  e.file.expires = now + limits_.ttl;
  const std::string uri = e.file.uri;
  caller_bytes_[caller] += size;
  ++caller_files_[caller];
  total_bytes_ += size;
  by_uri_.emplace(uri, std::move(e));
  return uri;
}

std::optional<McpFileStore::Kept> McpFileStore::Read(const std::string& caller,
                                                     const std::string& uri,
                                                     Clock::time_point now) {
  std::lock_guard lock(mu_);
  ExpireLocked(now);
  auto it = by_uri_.find(uri);
  if (it == by_uri_.end() || it->second.owner != caller) return std::nullopt;
  return it->second.file;
}

std::vector<McpFileStore::Kept> McpFileStore::List(const std::string& caller,
                                                   Clock::time_point now) {
  std::lock_guard lock(mu_);
  ExpireLocked(now);
  std::vector<const Entry*> own;
  for (const auto& [uri, e] : by_uri_) {
    if (e.owner == caller) own.push_back(&e);
  }
  std::sort(own.begin(), own.end(),
            [](const Entry* a, const Entry* b) { return a->order < b->order; });
  std::vector<Kept> out;
  out.reserve(own.size());
  for (const Entry* e : own) out.push_back(e->file);
  return out;
}

std::size_t McpFileStore::total_bytes() {
  std::lock_guard lock(mu_);
  return total_bytes_;
}

void McpFileStore::ExpireLocked(Clock::time_point now) {
  for (auto it = by_uri_.begin(); it != by_uri_.end();) {
    auto next = std::next(it);
    if (it->second.file.expires <= now) EraseLocked(it);
    it = next;
  }
}

void McpFileStore::EraseLocked(std::map<std::string, Entry>::iterator it) {
  const std::string owner = it->second.owner;
  const std::size_t size = it->second.file.data->size();
  total_bytes_ -= size;
  caller_bytes_[owner] -= size;
  if (--caller_files_[owner] == 0) {
    caller_files_.erase(owner);
    caller_bytes_.erase(owner);
  }
  by_uri_.erase(it);
}

std::map<std::string, McpFileStore::Entry>::iterator McpFileStore::OldestLocked(
    const std::string* owner) {
  auto oldest = by_uri_.end();
  for (auto it = by_uri_.begin(); it != by_uri_.end(); ++it) {
    if (owner != nullptr && it->second.owner != *owner) continue;
    if (oldest == by_uri_.end() || it->second.order < oldest->second.order) oldest = it;
  }
  return oldest;
}

}  // namespace codeact::internal
