#include "sandbox/namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <string>

#include "sandbox/sandbox_config.hpp"
#include "sandbox/setup_report.hpp"

namespace codeact::internal {
namespace {

void WriteProcFile(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  Must(fd >= 0, "open " + path);
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  ::close(fd);
  if (!ok) FailStep("write " + path, err, text);
}

}  // namespace

void JoinCgroup(const std::vector<std::string>& join_files) {
  for (const auto& file : join_files) WriteProcFile(file, "0");
}

void EnterUserNamespace() {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  Must(::unshare(CLONE_NEWUSER) == 0, "unshare(CLONE_NEWUSER)");
  // "deny" first: an unprivileged writer may map its gid only after giving up setgroups(2).
  WriteProcFile("/proc/self/setgroups", "deny");
  WriteProcFile("/proc/self/uid_map",
                std::to_string(kSandboxUid) + " " + std::to_string(uid) + " 1");
  WriteProcFile("/proc/self/gid_map",
                std::to_string(kSandboxUid) + " " + std::to_string(gid) + " 1");
}

void EnterOtherNamespaces() {
  const std::pair<int, const char*> steps[] = {
      {CLONE_NEWNS, "unshare(CLONE_NEWNS)"},   {CLONE_NEWPID, "unshare(CLONE_NEWPID)"},
      {CLONE_NEWNET, "unshare(CLONE_NEWNET)"}, {CLONE_NEWIPC, "unshare(CLONE_NEWIPC)"},
      {CLONE_NEWUTS, "unshare(CLONE_NEWUTS)"}, {CLONE_NEWCGROUP, "unshare(CLONE_NEWCGROUP)"}};
  for (const auto& [flag, step] : steps) Must(::unshare(flag) == 0, step);
}

}  // namespace codeact::internal
