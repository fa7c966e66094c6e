#include "provider/fingerprint.hpp"

#include <cstdio>

#include "limits/limit_table.hpp"

namespace codeact::internal {
namespace {

// FNV-1a over a canonical text; each field is length-prefixed so no two configs collide by
// concatenation.
class Hasher {
 public:
  Hasher& Add(std::string_view s) {
    AddRaw(std::to_string(s.size()));
    AddRaw(":");
    AddRaw(s);
    return *this;
  }
  Hasher& Add(std::int64_t v) { return Add(std::to_string(v)); }
  std::string Hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  void AddRaw(std::string_view s) {
    for (unsigned char c : s) {
      h_ ^= c;
      h_ *= 0x100000001b3ULL;
    }
  }
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace

std::string ComputeFingerprint(const RunSnapshot& s, std::uint64_t tool_registry_version,
                               const ExecutorOptions& executor) {
  Hasher h;
  h.Add("tools").Add(static_cast<std::int64_t>(tool_registry_version));
  for (const auto& t : s.tools) h.Add(t.name);  // snapshot tools are sorted by name
  h.Add("mounts");
  for (const auto& m : s.mounts) {
    h.Add(m.host_path).Add(m.mount_path).Add(MountModeName(m.mode)).Add(m.write_bytes_limit);
    // Only for files, so that the fingerprints of directory mounts stay what they were.
    if (m.kind == MountKind::kFile) h.Add(MountKindName(m.kind));
    // Only where not the defaults, for the same reason.
    if (m.disk_bytes_limit != FileMount{}.disk_bytes_limit ||
        m.disk_files_limit != FileMount{}.disk_files_limit) {
      h.Add("disk").Add(m.disk_bytes_limit).Add(m.disk_files_limit);
    }
  }
  h.Add("network");
  for (const auto& n : s.network_targets) h.Add(n.text);
  h.Add("env");
  for (const auto& [k, v] : s.environment) h.Add(k).Add(v);
  h.Add("limits").Add(LimitKey(s.limits, /*child_only=*/false));
  h.Add("backend").Add(BackendName(executor.backend)).Add(IsolationName(executor.isolation));
  h.Add(executor.python_path)
      .Add(executor.resource_dir)
      .Add(executor.site_packages ? "site" : "nosite");
  h.Add("hyperlight").Add(executor.hyperlight.sdk_path);
  for (const auto& input : executor.hyperlight.inputs) h.Add(input);
  h.Add(std::to_string(executor.hyperlight.output_wait_ms));
  return h.Hex();
}

}  // namespace codeact::internal
