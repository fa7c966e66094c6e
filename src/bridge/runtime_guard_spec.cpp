#include "bridge/runtime_guard_spec.hpp"

namespace codeact::internal {
namespace {

boost::json::array Strings(const std::vector<std::string>& items) {
  boost::json::array out;
  for (const auto& s : items) out.emplace_back(s);
  return out;
}

}  // namespace

boost::json::object GuardSystemJson(const RuntimeGuardSpec& spec) {
  boost::json::array fds;
  for (int fd : spec.bridge_fds) fds.emplace_back(fd);
  boost::json::object out{{"exec", Strings(spec.exec)},
                          {"read", Strings(spec.read)},
                          {"write", Strings(spec.write)},
                          {"bridge_fds", std::move(fds)}};
  if (!spec.tmp.empty()) out["tmp"] = spec.tmp;
  return out;
}

boost::json::object GuardRequestJson(const RuntimeGuardSpec& spec) {
  boost::json::object out = GuardSystemJson(spec);
  out["imports"] = Strings(spec.imports);
  return out;
}

}  // namespace codeact::internal
