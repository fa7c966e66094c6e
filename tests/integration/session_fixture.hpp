// What the session tests share (session_test.cpp, session_pause_test.cpp): a provider at the
// namespaces level without validation, or a skip saying why sessions cannot run here, and the
// session groups and directories a test counts.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "codeact/provider.hpp"
#include "codeact/session.hpp"
#include "files/scratch_owner.hpp"
#include "process/run_cgroup.hpp"

namespace codeact::testing {

inline ProviderOptions Options(ExecutionLimits limits = {}, SessionSettings sessions = {}) {
  ProviderOptions o;
  o.executor.isolation = IsolationLevel::kNamespaces;
  o.executor.warm_pool_size = 0;
  o.limits = limits;
  o.sessions = sessions;
  // These tests are about the executor's sessions, not the policy (the MCP tests run with it).
  o.validate = false;
  o.policy.extra_allowed_imports = {"signal",     "sys",  "threading", "os",  "tempfile",
                                    "subprocess", "json", "glob",      "time"};
  return o;
}

// The provider, or a skip saying why sessions cannot run here (no namespaces level, no cgroups:
// a non-root host without a delegated subtree).
inline std::shared_ptr<CodeActProvider> ProviderOrSkip(ProviderOptions options, std::string& why) {
  auto provider = CodeActProvider::Create(std::move(options));
  if (!provider.ok()) {
    why = provider.status().message();
    return nullptr;
  }
  auto probe = (*provider)->OpenSession();
  if (!probe.ok()) {
    why = probe.status().message();
    return nullptr;
  }
  (*probe)->Close();
  return *provider;
}

#define PROVIDER_OR_SKIP(var, options)                                          \
  std::string skip_reason;                                                      \
  auto var = ::codeact::testing::ProviderOrSkip(options, skip_reason);          \
  if (!var) GTEST_SKIP() << "sessions are not available here: " << skip_reason; \
  (void)0

inline std::shared_ptr<Session> Open(CodeActProvider& provider, const std::string& name = "") {
  auto s = provider.OpenSession({name});
  if (!s.ok()) throw std::runtime_error(s.status().ToString());
  return *s;
}

// Every directory of this process's session groups (parent and children), in every hierarchy.
inline std::vector<std::string> SessionGroupDirs() {
  std::vector<std::string> dirs;
  const auto site = internal::CgroupSite::ForThisProcess();
  const std::string prefix = std::to_string(::getpid()) + "-";
  std::vector<std::string> roots;
  for (const auto& h : site->hierarchies) roots.push_back(h.dir);
  const char* root = std::getenv("CODEACT_CGROUP_ROOT");
  roots.push_back(std::string(root && *root ? root : "/sys/fs/cgroup") + "/freezer/" +
                  internal::CgroupSubtreeName(::geteuid()));
  for (const auto& dir : roots) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (!e.is_directory() || e.path().filename().string().rfind(prefix, 0) != 0) continue;
      dirs.push_back(e.path().string());
    }
  }
  return dirs;
}

// The CPU time the one open session's cgroup has counted, in ms.
inline std::optional<std::int64_t> OnlySessionCpuMs() {
  const auto site = internal::CgroupSite::ForThisProcess();
  const std::string prefix = std::to_string(::getpid()) + "-";
  for (const auto& h : site->hierarchies) {
    if (!h.cpuacct) continue;
    std::error_code ec;
    for (const auto& parent : std::filesystem::directory_iterator(h.dir, ec)) {
      if (parent.path().filename().string().rfind(prefix, 0) != 0) continue;
      for (const auto& group : std::filesystem::directory_iterator(parent.path(), ec)) {
        if (!group.is_directory()) continue;
        std::ifstream in(group.path() / (h.v2 ? "cpu.stat" : "cpuacct.usage"));
        if (!h.v2) {
          std::int64_t ns = 0;
          if (in >> ns) return ns / 1'000'000;
        } else {
          std::string key;
          std::int64_t value = 0;
          while (in >> key >> value) {
            if (key == "usage_usec") return value / 1000;
          }
        }
      }
    }
  }
  return std::nullopt;
}

inline int CountSessionDirs() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(internal::ScratchBaseDir(), ec)) {
    if (e.path().filename().string().rfind("codeact-session-", 0) == 0) ++n;
  }
  return n;
}

}  // namespace codeact::testing
