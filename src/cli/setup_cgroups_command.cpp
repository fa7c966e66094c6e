// codeact setup-cgroups [--user NAME]
// Run once as root so that a non-root user's runs get a cgroup each (cgroup v1): makes
// <hierarchy>/codeact-<uid> in the pids, memory, cpu and cpuacct hierarchies and gives it to
// the user (src/process/run_cgroup.hpp). Optional: without it that user's runs go without a
// cgroup (default limits degrade with a note, explicit memory and process limits are refused).
#include <pwd.h>

#include <cstdlib>
#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "process/run_cgroup.hpp"

namespace codeact::cli {
namespace {

constexpr const char* kSetupCgroupsProse =
    "Run once as root: makes the cgroup subtree the user's runs go under (cgroup v1:\n"
    "<hierarchy>/codeact-<uid> in pids, memory, cpu and cpuacct, owned by the user) and prints "
    "it.\n"
    "Without --user, the subtree of root itself (<hierarchy>/codeact). On cgroup v2 there is "
    "nothing to\n"
    "set up: a user's runs use the subtree systemd delegates to it (user@UID.service).\n"
    "Exit 0 when the subtree is ready, 1 when it cannot be made, 2 for a bad invocation.\n";

struct Owner {
  uid_t uid = 0;
  gid_t gid = 0;
};

const FlagTable<Owner>& SetupCgroupsFlagTable() {
  static const FlagTable<Owner> table = {
      {{"--user", "NAME", "root", "the user whose runs go under the subtree"},
       [](const std::string& name, Owner& owner) {
         const passwd* user = ::getpwnam(name.c_str());
         if (user == nullptr) return InvalidArgument("no user named \"" + name + "\"");
         owner.uid = user->pw_uid;
         owner.gid = user->pw_gid;
         return Status::Ok();
       }},
  };
  return table;
}

}  // namespace

std::vector<FlagDoc> SetupCgroupsFlagDocs() { return DocsOf(SetupCgroupsFlagTable()); }

int CmdSetupCgroups(const std::vector<std::string>& argv) {
  Owner owner;
  auto started =
      StartCommand("setup-cgroups", kSetupCgroupsProse, argv, SetupCgroupsFlagTable(), owner);
  if (const int* exit = std::get_if<int>(&started)) return *exit;
  const char* env = std::getenv("CODEACT_CGROUP_ROOT");
  auto made = internal::SetUpUserCgroups(env != nullptr && *env != '\0' ? env : "/sys/fs/cgroup",
                                         owner.uid, owner.gid);
  if (!made.ok()) {
    std::cerr << "codeact setup-cgroups: " << made.status().message() << "\n";
    return kExitFailed;
  }
  for (const auto& dir : *made) std::cout << dir << "\n";
  return kExitOk;
}

}  // namespace codeact::cli
