#include "protocol/runtime_guard_spec.hpp"

#include "protocol/protocol.hpp"

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
  namespace field = protocol::field;
  boost::json::object out{{field::kExec, Strings(spec.exec)},
                          {field::kRead, Strings(spec.read)},
                          {field::kWrite, Strings(spec.write)},
                          {field::kBridgeFds, std::move(fds)}};
  if (!spec.tmp.empty()) out[field::kTmp] = spec.tmp;
  if (spec.max_threads > 0) out[field::kMaxThreads] = spec.max_threads;
  return out;
}

boost::json::object GuardRequestJson(const RuntimeGuardSpec& spec) {
  boost::json::object out = GuardSystemJson(spec);
  out[protocol::field::kImports] = Strings(spec.imports);
  return out;
}

}  // namespace codeact::internal
