#include "common/loadable_module.hpp"

#include <dlfcn.h>

namespace codeact::internal {

StatusOr<const void*> LoadModuleTable(const std::string& path, const char* entry,
                                      const std::string& what, const char* env, int abi,
                                      bool global) {
  if (path.empty()) {
    return Unavailable(what +
                       " was not found: not in this build, not in <prefix>/libexec/codeact, "
                       "not where $" +
                       env + " points");
  }
  void* module = ::dlopen(path.c_str(), RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (module == nullptr) {
    const char* why = ::dlerror();
    return Unavailable("cannot load " + what + " " + path + ": " +
                       (why != nullptr ? why : "unknown error"));
  }
  using Entry = const void* (*)();
  auto function = reinterpret_cast<Entry>(::dlsym(module, entry));
  const void* table = function != nullptr ? function() : nullptr;
  if (table == nullptr) return Unavailable(what + " " + path + " has no " + entry);
  if (*static_cast<const int*>(table) != abi) {
    return Unavailable(what + " " + path + " is not this build's (another version of codeact?)");
  }
  return table;
}

}  // namespace codeact::internal
