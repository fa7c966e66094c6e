#include "bridge/tool_workers.hpp"

#include <chrono>

namespace codeact::internal {

KeptThreads& ToolWorkers::Instance() {
  static auto* workers = new KeptThreads({kMaxThreads, kMaxIdle, std::chrono::seconds(30)});
  return *workers;
}

}  // namespace codeact::internal
