// A host process for the warm pool tests: pool_host N [process|namespaces] starts a local
// executor with a pool of N at that isolation level, warms it,
// prints the pids of its ready children and of its fork servers on one line and then waits to be
// killed. The test SIGKILLs it and checks that none of them outlives it.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "backends/local/local_executor.hpp"
#include "codeact/executor.hpp"

int main(int argc, char** argv) {
  const int pool = argc > 1 ? std::atoi(argv[1]) : 2;
  codeact::ExecutorOptions options;
  options.warm_pool_size = pool;
  // argv[2]: "namespaces" for sandboxed children, else the process level (with a fork server).
  const bool sandboxed = argc > 2 && std::string(argv[2]) == "namespaces";
  options.isolation =
      sandboxed ? codeact::IsolationLevel::kNamespaces : codeact::IsolationLevel::kProcess;
  auto executor = codeact::CreateExecutor(options);
  if (!executor.ok()) {
    std::fprintf(stderr, "pool_host: %s\n", executor.status().ToString().c_str());
    return 2;
  }
  const codeact::RunSnapshot snapshot;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<pid_t> idle;
  while ((idle = codeact::internal::IdleChildPids(**executor)).size() <
         static_cast<std::size_t>(pool)) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "pool_host: the pool did not fill\n");
      return 3;
    }
    (*executor)->Warm(snapshot);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (pid_t pid : idle) std::printf("%d ", static_cast<int>(pid));
  for (pid_t pid : codeact::internal::ForkServerPids(**executor))
    std::printf("%d ", static_cast<int>(pid));
  std::printf("\n");
  std::fflush(stdout);
  while (true) pause();
}
