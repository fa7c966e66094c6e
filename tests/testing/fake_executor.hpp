// FakeExecutor: the one fake Executor, for the tests above the executor (the provider, the MCP
// server, the MAF port). It records what each run was asked and answers from a script; it
// starts no process.
//
// With no `script`, a run ends `ok` with exit code 0 and prints `stdout_text`. A script answers
// each run itself (and may block, wait on cancellation or count): its state lives in the test.
// Thread-safe: the MCP server runs calls concurrently; the record is kept under `mu`.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "codeact/executor.hpp"

namespace codeact::testing {

class FakeExecutor final : public Executor {
 public:
  using Script = std::function<ExecutionResult(const ExecutionRequest&, const RunSnapshot&)>;

  FakeExecutor() = default;
  explicit FakeExecutor(Script s) : script(std::move(s)) {}

  ExecutionResult Execute(const ExecutionRequest& request, const RunSnapshot& snapshot) override {
    ++runs;
    {
      std::lock_guard lock(mu);
      last_code = request.code;
      last_tools.clear();
      last_gated.clear();
      for (const auto& t : snapshot.tools) {
        last_tools.push_back(t.name);
        if (t.requires_approval) last_gated.push_back(t.name);
      }
    }
    if (script) return script(request, snapshot);
    ExecutionResult r;
    r.outcome = Outcome::kOk;
    r.exit_code = 0;
    r.stdout_text = stdout_text;
    return r;
  }
  BackendKind backend() const override { return BackendKind::kLocal; }
  IsolationLevel isolation() const override { return isolation_; }
  // `traits_`; with `host_paths_follow_isolation`, mounts appear at their host paths exactly
  // when the level is kProcess (as the local executor reports them).
  BackendTraits Traits(const RunSnapshot&) const override {
    BackendTraits t = traits_;
    if (host_paths_follow_isolation) t.host_paths_visible = isolation_ == IsolationLevel::kProcess;
    return t;
  }

  // How runs are answered (set before the first run).
  Script script;
  std::string stdout_text;  // what an unscripted run prints
  IsolationLevel isolation_ = IsolationLevel::kProcess;
  BackendTraits traits_;
  bool host_paths_follow_isolation = false;

  // What the runs were asked.
  std::atomic<int> runs{0};
  std::mutex mu;
  std::string last_code;                // the last run's code
  std::vector<std::string> last_tools;  // the tools in the last run's snapshot, in order
  std::vector<std::string> last_gated;  // those of them still gated (requires_approval)
};

}  // namespace codeact::testing
