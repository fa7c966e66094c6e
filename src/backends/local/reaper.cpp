#include "backends/local/reaper.hpp"

#include <memory>

namespace codeact::internal {

void Reaper::Finish(ReadyChild child) {
  // std::function needs a copyable task; the child is move-only, so the task shares it.
  thread_.Post([c = std::make_shared<ReadyChild>(std::move(child))] {
    ReadyChild finished = std::move(*c);
    finished.KillAll();
    finished.child->Wait();
  });  // the working directory goes when `finished` does, after the processes
}

}  // namespace codeact::internal
