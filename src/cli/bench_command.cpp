// codeact bench [--runs N] [--json FILE]: the figures of the README's "Performance", measured end
// to end in one run so their ratios can be compared on a noisy machine.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "backends/local/local_executor.hpp"
#include "bench/programs.hpp"
#include "bench/stats.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "codeact/executor.hpp"
#include "codeact/provider.hpp"
#include "codeact/validator.hpp"
#include "process/child.hpp"
#include "server/mcp_server.hpp"

namespace codeact::cli {
namespace {

using Clock = std::chrono::steady_clock;
using bench::Samples;

struct Figure {
  std::string name;
  std::string unit;
  double p50 = 0, p95 = 0, p99 = 0;  // latency figures
  double value = 0;                  // rate or size figures
  std::string goal;
};

Figure Latency(std::string name, const Samples& s, std::string goal) {
  return {std::move(name),    "us", s.PercentileUs(50), s.PercentileUs(95),
          s.PercentileUs(99), 0,    std::move(goal)};
}

template <typename F>
Samples Measure(int runs, F&& body) {
  Samples s;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    body();
    s.Add(Clock::now() - start);
  }
  return s;
}

// A "Key:   N kB" line of a /proc file, in KiB; -1 when absent.
std::int64_t ProcKiB(pid_t pid, const char* file, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
  }
  return -1;
}

// Waits (up to 10 s) until the pool holds `count` idle children; returns their pids.
std::vector<pid_t> WaitForIdleChildren(const Executor& executor, int count) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  std::vector<pid_t> idle;
  while ((idle = internal::IdleChildPids(executor)).size() < static_cast<std::size_t>(count) &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return idle;
}

HostTool NoopTool() {
  // A declared schema, so the round trips include the bridge's argument check (valijson).
  return {"noop", "returns its argument",
          R"({"type":"object","properties":{"i":{"type":"integer","minimum":0}},"required":["i"]})",
          false, [](const std::string& kwargs) { return ToolResult::Success(kwargs); }};
}

bool Check(const ExecutionResult& r, const char* what) {
  if (r.success()) return true;
  std::cerr << "codeact bench: " << what << " did not succeed: " << OutcomeName(r.outcome) << " "
            << r.message << r.stderr_text << "\n";
  return false;
}

// What every measurement needs, and the figures measured so far in the order they print.
struct Bench {
  int runs = 0;
  std::string python;
  RunSnapshot snapshot;
  double bare_start_p50_us = 0;
  std::vector<Figure> figures;
};

// The executor `options` describe, with one print(1) run done; null (after saying why) when it
// cannot start or run.
std::unique_ptr<Executor> StartExecutor(const ExecutorOptions& options,
                                        const RunSnapshot& snapshot) {
  auto executor = CreateExecutor(options);
  if (!executor.ok()) {
    std::cerr << "codeact bench: " << executor.status().message() << "\n";
    return nullptr;
  }
  if (!Check((*executor)->Execute({"print(1)"}, snapshot), "print(1)")) return nullptr;
  return std::move(*executor);
}

// 1. The yardstick: one bare interpreter start, `python3 -I -c pass`; and the same without
// `site`, which is how the runner starts (-S), as a second reference.
void MeasureBareStarts(Bench& b) {
  auto bare_start = [&](std::vector<std::string> python_args) {
    internal::LaunchSpec bare;
    bare.executable = b.python;
    bare.args = std::move(python_args);
    bare.working_dir = "/";
    bare.bridge = false;
    return Measure(b.runs, [&] {
      auto child = internal::Child::Start(bare);
      if (child.ok()) (*child)->Wait();
    });
  };
  const Samples start = bare_start({"-I", "-c", "pass"});
  b.bare_start_p50_us = start.PercentileUs(50);
  b.figures.push_back(Latency("python3 -I -c pass (bare start)", start, "yardstick"));
  b.figures.push_back(Latency("python3 -I -S -c pass (no site)",
                              bare_start({"-I", "-S", "-c", "pass"}), "reference"));
}

// 2. Validation of a 50-line program, in process.
void MeasureValidation(Bench& b, Validator& validator) {
  const Samples validate = Measure(std::max(b.runs, 1000), [&] {
    validator.Validate(bench::kFiftyLineProgram, ValidationPolicy{});
  });
  b.figures.push_back(Latency("validate 50-line program", validate, "p50 <= 300 us"));
}

// One executor configuration of section 3.
struct Config {
  int pool;
  bool fork_server;
  IsolationLevel isolation;
  const char* variant;  // "" for the configuration the headline figures come from
};

// 3. execute_code("print(1)"): cold, or warm with a ready child. Returns the samples, or nullopt
// when a run failed.
std::optional<Samples> MeasureExecuteLatency(Bench& b, Executor& executor, const Config& c) {
  const std::string variant = c.variant;
  Samples exec;
  const int latency_runs = variant.empty() ? b.runs : b.runs / 4;
  for (int i = 0; i < latency_runs; ++i) {
    // Warm latency is what a run sees when a warm child is ready, as it is between an agent's
    // turns; waiting for the refill is not counted (sustained throughput is measured below).
    if (c.pool > 0) WaitForIdleChildren(executor, c.pool);
    const auto t0 = Clock::now();
    const bool ok = executor.Execute({"print(1)"}, b.snapshot).success();
    exec.Add(Clock::now() - t0);
    if (!ok) return std::nullopt;
  }
  if (c.pool == 0) {
    b.figures.push_back(Latency("execute print(1), cold (no pool)" + variant, exec,
                                variant.empty() ? "p50 <= 1.2 x bare start" : "reference"));
    b.figures.push_back({"cold / bare start (p50 ratio)" + variant, "x", 0, 0, 0,
                         exec.PercentileUs(50) / std::max(1.0, b.bare_start_p50_us),
                         variant.empty() ? "<= 1.2" : "reference"});
  } else {
    b.figures.push_back(Latency("execute print(1), warm pool" + variant, exec,
                                variant.empty() ? "p50 <= 3 ms" : "reference"));
  }
  return exec;
}

// 4. Tool-call round trips inside one run, less the run's own cost (`empty_run_s`).
bool MeasureToolCalls(Bench& b, Executor& executor, double empty_run_s) {
  const int calls = 5000;
  const std::string code = "for i in range(" + std::to_string(calls) + "):\n    await noop(i=i)\n";
  const auto t0 = Clock::now();
  const ExecutionResult many = executor.Execute({code}, b.snapshot);
  const double with_calls = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!Check(many, "the tool-call loop")) return false;
  b.figures.push_back({"tool-call round trips", "calls/s", 0, 0, 0,
                       calls / std::max(1e-6, with_calls - empty_run_s), ">= 10000"});
  return true;
}

// 5. Sustained executions per second from two threads.
void MeasureSustained(Bench& b, Executor& executor, const std::string& variant) {
  std::atomic<int> done{0}, failed{0};
  const int per_thread = variant.empty() ? b.runs : b.runs / 4;
  const auto s0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i) {
        (executor.Execute({"print(1)"}, b.snapshot).success() ? done : failed)++;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - s0).count();
  b.figures.push_back({"sustained executions, 2 threads" + variant, "runs/s", 0, 0, 0, done / secs,
                       variant.empty() ? ">= 200" : "reference"});
  if (failed > 0) std::cerr << "codeact bench: " << failed << " sustained runs failed\n";
}

// 6. Memory of a warm child: an interpreter with the runner loaded, waiting for its request.
// (At the namespaces level the pooled pid is the sandbox launcher's, not the interpreter's, so
// the caller measures the process level only.)
void MeasurePoolMemory(Bench& b, const Executor& executor, int pool, const std::string& variant) {
  const std::vector<pid_t> idle = WaitForIdleChildren(executor, pool);
  std::int64_t rss_kib = 0, pss_kib = 0, uss_kib = 0;
  for (pid_t pid : idle) {
    rss_kib += std::max<std::int64_t>(0, ProcKiB(pid, "status", "VmRSS"));
    pss_kib += std::max<std::int64_t>(0, ProcKiB(pid, "smaps_rollup", "Pss"));
    uss_kib += std::max<std::int64_t>(0, ProcKiB(pid, "smaps_rollup", "Private_Clean")) +
               std::max<std::int64_t>(0, ProcKiB(pid, "smaps_rollup", "Private_Dirty"));
  }
  if (!idle.empty()) {
    // RSS counts every page a child maps, also those it shares (with the fork server, most);
    // PSS splits shared pages between their users; USS is what the child alone holds, i.e.
    // what one more pooled child costs the host.
    const double n = static_cast<double>(idle.size());
    b.figures.push_back({"RSS per warm pooled child" + variant, "MiB", 0, 0, 0,
                         rss_kib / 1024.0 / n, variant.empty() ? "<= 15 MiB" : "reference"});
    b.figures.push_back(
        {"PSS per warm pooled child" + variant, "MiB", 0, 0, 0, pss_kib / 1024.0 / n, "reference"});
    b.figures.push_back(
        {"USS per warm pooled child" + variant, "MiB", 0, 0, 0, uss_kib / 1024.0 / n, "reference"});
  }
  for (pid_t pid : internal::ForkServerPids(executor)) {
    b.figures.push_back({"RSS of the fork server (one per key)", "MiB", 0, 0, 0,
                         std::max<std::int64_t>(0, ProcKiB(pid, "status", "VmRSS")) / 1024.0,
                         "reference"});
  }
}

// Sections 3 to 6 for one configuration.
bool MeasureConfiguration(Bench& b, const Config& c) {
  ExecutorOptions options;
  options.python_path = b.python;
  options.warm_pool_size = c.pool;
  options.fork_server = c.fork_server;
  options.isolation = c.isolation;
  const std::unique_ptr<Executor> executor = StartExecutor(options, b.snapshot);
  if (!executor) return false;
  const std::string variant = c.variant;
  const std::optional<Samples> exec = MeasureExecuteLatency(b, *executor, c);
  if (!exec) return false;
  if (c.pool == 0) return true;
  if (variant.empty() && !MeasureToolCalls(b, *executor, exec->PercentileUs(50) / 1e6))
    return false;
  MeasureSustained(b, *executor, variant);
  if (c.isolation == IsolationLevel::kProcess) MeasurePoolMemory(b, *executor, c.pool, variant);
  return true;
}

// 6b. The runtime guard's cost (on by default, so every row above includes it): warm runs and
// the tool-call loop at the process level with and without it, interleaved run by run so that
// both see the same machine. Pooled children arm the OS layers before they report ready, so a
// warm run pays only for the rest (the audit hook, the guarded __import__, the request's check).
// executors[0] runs with the guard, executors[1] without.
bool MeasureGuardCost(Bench& b) {
  std::unique_ptr<Executor> executors[2];
  for (bool guard : {true, false}) {
    ExecutorOptions options;
    options.python_path = b.python;
    options.warm_pool_size = 2;
    options.isolation = IsolationLevel::kProcess;
    options.runtime_guard = guard;
    executors[guard ? 0 : 1] = StartExecutor(options, b.snapshot);
    if (!executors[guard ? 0 : 1]) return false;
  }
  // Both pools full before each run: neither run shares the machine with the other's refill.
  auto both_full = [&] {
    WaitForIdleChildren(*executors[0], 2);
    WaitForIdleChildren(*executors[1], 2);
  };
  Samples warm[2];
  for (int i = 0; i < b.runs; ++i) {
    for (int k : {i % 2, 1 - i % 2}) {  // alternate which goes first
      both_full();
      const auto t0 = Clock::now();
      if (!Check(executors[k]->Execute({"print(1)"}, b.snapshot), "print(1)")) return false;
      warm[k].Add(Clock::now() - t0);
    }
  }
  const int calls = 5000;
  const std::string code = "for i in range(" + std::to_string(calls) + "):\n    await noop(i=i)\n";
  double best_rate[2] = {0, 0};
  for (int round = 0; round < 3;
       ++round) {  // the best of three: the loop is long, the machine noisy
    for (int k : {round % 2, 1 - round % 2}) {
      both_full();
      const auto t0 = Clock::now();
      const ExecutionResult many = executors[k]->Execute({code}, b.snapshot);
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      if (!Check(many, "the tool-call loop")) return false;
      best_rate[k] =
          std::max(best_rate[k], calls / std::max(1e-6, secs - warm[k].PercentileUs(50) / 1e6));
    }
  }
  std::vector<Figure>& f = b.figures;
  f.push_back(Latency("execute print(1), warm pool, runtime guard", warm[0], "reference"));
  f.push_back(Latency("execute print(1), warm pool, no runtime guard", warm[1], "reference"));
  f.push_back({"runtime guard: warm p50 cost", "usec", 0, 0, 0,
               warm[0].PercentileUs(50) - warm[1].PercentileUs(50), "<= 300 us"});
  f.push_back(
      {"tool-call round trips, runtime guard", "calls/s", 0, 0, 0, best_rate[0], "reference"});
  f.push_back(
      {"tool-call round trips, no runtime guard", "calls/s", 0, 0, 0, best_rate[1], "reference"});
  f.push_back({"runtime guard: tool-call rate ratio", "x", 0, 0, 0,
               best_rate[0] / std::max(1.0, best_rate[1]), ">= 0.9"});
  return true;
}

// 7. The MCP server's tools/call of print(1) with its pool warm: one request line in, one
// response line out, through validation, the provider and the executor (what `codeact mcp`
// does per line, minus the stdio pipes).
bool MeasureMcpCall(Bench& b) {
  ProviderOptions provider_options;
  provider_options.executor.python_path = b.python;
  provider_options.executor.warm_pool_size = 2;
  provider_options.executor.isolation = IsolationLevel::kProcess;  // namespaces: see the rows above
  auto provider = LocalCodeActProvider::Create(provider_options);
  if (!provider.ok()) {
    std::cerr << "codeact bench: " << provider.status().message() << "\n";
    return false;
  }
  const ExecuteCodeFunction function(*provider);
  internal::McpServerOptions server_options;
  server_options.log_to_stderr = false;
  server_options.tool_definition = [function] {
    return function.Definition(DefinitionFormat::kMcp);
  };
  server_options.execute = [function](const std::string& arguments,
                                      const CancellationToken& cancel) {
    return function.InvokeResult(arguments, {.cancel = cancel});
  };
  internal::McpServer server(std::move(server_options));
  server.HandleLine(
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
      R"("capabilities":{},"clientInfo":{"name":"bench","version":"1"}}})");
  (*provider)->Warm();
  const std::string call =
      R"j({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"print(1)"}}})j";
  Samples mcp;
  for (int i = 0; i < b.runs; ++i) {
    WaitForIdleChildren((*provider)->executor(), 2);
    const auto t0 = Clock::now();
    const std::optional<std::string> response = server.HandleLine(call);
    mcp.Add(Clock::now() - t0);
    if (!response || response->find(R"("isError":false)") == std::string::npos) {
      std::cerr << "codeact bench: the MCP tools/call failed: "
                << response.value_or("(no response)") << "\n";
      return false;
    }
  }
  b.figures.push_back(Latency("MCP tools/call print(1), warm pool", mcp, "p50 <= 3 ms"));
  return true;
}

void PrintFigures(const std::vector<Figure>& figures) {
  std::printf("%-52s %12s %12s %12s %14s  %s\n", "figure", "p50", "p95", "p99", "value", "goal");
  for (const auto& f : figures) {
    if (f.unit == "us") {
      std::printf("%-52s %10.0fus %10.0fus %10.0fus %14s  %s\n", f.name.c_str(), f.p50, f.p95,
                  f.p99, "", f.goal.c_str());
    } else {
      std::printf("%-52s %12s %12s %12s %10.1f %-7s  %s\n", f.name.c_str(), "", "", "", f.value,
                  f.unit.c_str(), f.goal.c_str());
    }
  }
}

void WriteJson(const std::string& path, int runs, const std::vector<Figure>& figures) {
  std::ostringstream out;
  std::string load;
  std::getline(std::ifstream("/proc/loadavg"), load);  // the machine's load, for the record
  out << "{\"runs\":" << runs << ",\"cores\":" << std::thread::hardware_concurrency()
      << ",\"loadavg\":\"" << load.substr(0, load.find(' ', load.find(' ', load.find(' ') + 1) + 1))
      << "\",\"figures\":[";
  for (std::size_t i = 0; i < figures.size(); ++i) {
    const auto& f = figures[i];
    out << (i ? "," : "") << "{\"name\":\"" << f.name << "\",\"unit\":\"" << f.unit
        << "\",\"p50\":" << f.p50 << ",\"p95\":" << f.p95 << ",\"p99\":" << f.p99
        << ",\"value\":" << f.value << ",\"goal\":\"" << f.goal << "\"}";
  }
  out << "]}\n";
  std::ofstream(path) << out.str();
}

}  // namespace

int CmdBench(const std::vector<std::string>& argv) {
  constexpr const char* kHelp =
      "usage: codeact bench [--runs N] [--json FILE] [--python PATH]\n"
      "Measures the performance figures in one run and prints p50/p95/p99 and rates.\n";
  if (WantsHelp(argv)) {
    std::cout << kHelp;
    return kExitOk;
  }
  auto args = Args::Parse(argv, {{"--runs", "--json", "--python"}, {}});
  if (!args.ok() || !args->positionals().empty()) {
    std::cerr << kHelp;
    return kExitUsage;
  }
  auto validator = Validator::Embedded();
  if (!validator.ok()) {
    std::cerr << "codeact bench: " << validator.status().message() << "\n";
    return kExitUsage;
  }
  Bench b;
  b.runs = std::max(10, std::atoi(args->Get("--runs").value_or("200").c_str()));
  b.python = args->Get("--python").value_or((*validator)->InstallationInterpreter());
  MeasureBareStarts(b);
  MeasureValidation(b, **validator);
  b.snapshot.tools = {NoopTool()};
  b.snapshot.fingerprint = "bench";
  b.snapshot.limits.max_tool_calls = 10'000;
  // Process level: cold; warm with the fork server (its default); warm with an interpreter
  // started per child. Namespaces level (no fork server there): cold and warm.
  const Config configs[] = {{0, false, IsolationLevel::kProcess, ""},
                            {2, true, IsolationLevel::kProcess, ""},
                            {2, false, IsolationLevel::kProcess, " (no fork server)"},
                            {0, false, IsolationLevel::kNamespaces, " (namespaces)"},
                            {2, false, IsolationLevel::kNamespaces, " (namespaces)"}};
  for (const Config& c : configs) {
    if (!MeasureConfiguration(b, c)) return kExitFailed;
  }
  if (!MeasureGuardCost(b) || !MeasureMcpCall(b)) return kExitFailed;
  PrintFigures(b.figures);
  if (auto path = args->Get("--json")) WriteJson(*path, b.runs, b.figures);
  return kExitOk;
}

}  // namespace codeact::cli
