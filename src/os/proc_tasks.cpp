#include "os/proc_tasks.hpp"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace codeact::internal {

std::int64_t TasksOfRealUid(uid_t uid) {
  std::int64_t tasks = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return 0;
  while (const dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    std::ifstream status(std::string("/proc/") + e->d_name + "/status");
    long real_uid = -1;
    long threads = 0;
    // "Uid:" comes before "Threads:"; the rest of the file is not needed.
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) == 0) {
        real_uid = std::strtol(line.c_str() + 4, nullptr, 10);
        if (real_uid != static_cast<long>(uid)) break;
      } else if (line.rfind("Threads:", 0) == 0) {
        threads = std::strtol(line.c_str() + 8, nullptr, 10);
        break;
      }
    }
    if (real_uid == static_cast<long>(uid)) tasks += threads;
  }
  ::closedir(proc);
  return tasks;
}

}  // namespace codeact::internal
