#include "sandbox/mount_steps.hpp"

#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "sandbox/setup_report.hpp"

namespace codeact::internal {
namespace {

// What the kernel shows in /proc about the host rather than the sandbox, masked as container
// runtimes do (the files by /dev/null, the directories by an empty read-only tmpfs), and
// /proc/sys read-only. The code's uid is an ordinary host uid, so most of these are closed to it
// anyway; this keeps them closed should a file's permissions be looser than they should.
void MaskProc(const std::string& root) {
  const std::string proc = root + "/proc";
  const std::string sys = proc + "/sys";
  Must(::mount(sys.c_str(), sys.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0,
       "bind /proc/sys");
  Must(::mount(nullptr, sys.c_str(), nullptr,
               MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0,
       "remount /proc/sys read-only");
  for (const char* name :
       {"kcore",         "keys",        "key-users",   "timer_list",  "sched_debug",
        "kpageflags",    "kpagecount",  "kpagecgroup", "slabinfo",    "sysrq-trigger",
        "latency_stats", "timer_stats", "kallsyms",    "vmallocinfo", "pagetypeinfo",
        "zoneinfo",      "buddyinfo",   "iomem",       "ioports",     "kmsg",
        "config.gz",     "mtrr",        "modules"}) {
    const std::string target = proc + "/" + name;
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0) continue;  // not on this kernel
    Must(::mount((root + "/dev/null").c_str(), target.c_str(), nullptr, MS_BIND, nullptr) == 0,
         std::string("mask /proc/") + name);
  }
  // One empty tmpfs, read-only as a file system, masks the first directory and is bound over the
  // others: a bind is a mount of the same superblock, where a tmpfs each would make (and, as the
  // run ends, tear down) a superblock each.
  std::string empty;
  for (const char* name : {"acpi", "scsi", "irq", "bus", "fs", "driver", "tty"}) {
    const std::string target = proc + "/" + name;
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    const bool made =
        empty.empty()
            ? ::mount("tmpfs", target.c_str(), "tmpfs",
                      MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,nr_inodes=1") == 0
            : ::mount(empty.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) == 0;
    Must(made, std::string("mask /proc/") + name);
    if (empty.empty()) empty = target;
  }
}

}  // namespace

void MountTmpfs(const std::string& target, const std::string& options, const std::string& step) {
  Must(::mount("tmpfs", target.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0, step);
}

void MountMaskedProc(const std::string& root) {
  Must(MountProcUnlessRefused(root, /*masked=*/true), "mount /proc");
}

bool MountProcUnlessRefused(const std::string& root, bool masked) {
  if (::mount("proc", (root + "/proc").c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              nullptr) != 0) {
    if (errno == EPERM) return false;
    FailStep("mount /proc", errno);
  }
  if (masked) MaskProc(root);
  return true;
}

}  // namespace codeact::internal
