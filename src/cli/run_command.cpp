// codeact run [provider flags] FILE|-
//
// One shot, in parallel where it can be: the executor is made from the per-user cache (runner,
// interpreter version, sandbox probe) and the child starts (Warm without a pool starts one child
// for the run). The child validates the code itself before running any of it (the validator
// package staged beside the runner), so the embedded interpreter (~50 ms of CPU) starts only
// where something else needs it. Nothing started here outlives the command.
#include <boost/json.hpp>
#include <iostream>
#include <string>
#include <string_view>

#include "backends/executor_introspection.hpp"
#include "cli/commands.hpp"
#include "cli/provider_flags.hpp"
#include "codeact/json.hpp"
#include "common/utf8.hpp"
#include "files/bounded_read.hpp"
#include "json/serialize.hpp"
#include "validation/background_validator.hpp"
#include "validation/source_decoding.hpp"

namespace codeact::cli {

namespace {
constexpr const char* kRunProse =
    "Validates the code, runs it in a child interpreter under limits and prints the result JSON.\n"
    "Exit status: 0 when the run succeeded, 1 for any other outcome, 2 for a bad invocation.\n"
    "With --stream the output is printed as it comes, one JSON object a line (NDJSON):\n"
    "{\"event\":\"stdout\",\"data\":\"...\"} or \"stderr\" per chunk, then\n"
    "{\"event\":\"result\",\"data\":{...the result JSON...}}.\n";

struct RunFlags {
  bool stream = false;
};

const FlagTable<RunFlags>& RunFlagTable() {
  static const FlagTable<RunFlags> table = {
      {{"--stream", "", "",
        "print the run's output while it runs, as NDJSON events (stdout, stderr chunks, then the "
        "result); chunks are the bytes the result keeps, at least one every 100 ms"},
       [](const std::string&, RunFlags& flags) {
         flags.stream = true;
         return Status::Ok();
       }},
  };
  return table;
}

// One chunk's NDJSON line: {"event":"stdout","data":TEXT}. A chunk is bytes; its line holds it as
// text, a byte that is not UTF-8 replaced (the result's own output is repaired the same way).
std::string ChunkLine(const OutputChunk& chunk) {
  boost::json::object line;
  line["event"] = OutputStreamKindName(chunk.stream);
  line["data"] = internal::SanitizeUtf8(chunk.data);
  return internal::SerializeJson(line) + "\n";
}

void PrintChunk(const OutputChunk& chunk) { std::cout << ChunkLine(chunk) << std::flush; }

// The result JSON, or with --stream its NDJSON event: the JSON `codeact run` prints, byte for
// byte, as the event's data.
void PrintResult(const ExecutionResult& result, bool stream) {
  if (stream) {
    std::cout << R"({"event":"result","data":)" << ToJson(result) << "}\n" << std::flush;
  } else {
    std::cout << ToJson(result) << "\n";
  }
}

}  // namespace

std::vector<FlagDoc> RunFlagDocs() { return DocsOf(RunFlagTable()); }

int CmdRun(const std::vector<std::string>& argv) {
  if (WantsHelp(argv)) {
    std::cout << CommandHelp("run", kRunProse);
    return kExitOk;
  }
  FlagSpec spec;
  AddToSpec(RunFlagDocs(), spec);
  auto args = Args::Parse(argv, WithProviderFlags(std::move(spec)));
  if (!args.ok() || args->positionals().size() != 1) {
    std::cerr << "codeact run: " << (args.ok() ? "expected one FILE or -" : args.status().message())
              << "\n"
              << CommandHelp("run", kRunProse);
    return kExitUsage;
  }
  auto code = ReadInput(args->positionals()[0], internal::kMaxCodeFileBytes, "code file");
  if (!code.ok()) {
    std::cerr << "codeact run: " << code.status().message() << "\n";
    return kExitUsage;
  }
  internal::PrestartThread();  // before the validator's thread loads libpython (its doc)
  // The local backend's child validates the code itself (ExecutorOptions::validate_in_child),
  // so the embedded interpreter starts only for what still needs it: the --tools names' check,
  // the tools of --mcp-server, a backend that validates in the host, the guard's import list
  // under --no-validate (on a thread of its own, as all of those are known now), and a coding
  // cookie's codec or a runner cache miss (on first use).
  const bool host_needs_validator = args->Has("--tools") || args->Has("--mcp-server") ||
                                    args->Get("--backend").value_or("local") != "local" ||
                                    args->Has("--no-validate");
  const auto validator = host_needs_validator ? internal::BackgroundValidator::Start()
                                              : internal::BackgroundValidator::OnFirstUse();
  // One run: a pool would start interpreters that no run takes (unless --pool asks for one).
  std::vector<HostTool> tools;
  auto provider = BuildProvider(*args, {.default_pool_size = 0,
                                        .validator = validator,
                                        .later_tools = &tools,
                                        .validate_in_child = true});
  if (!provider.ok()) {
    std::cerr << "codeact run: " << provider.status().message() << "\n";
    return kExitUsage;
  }
  RunFlags flags;
  (void)ApplyFlags(RunFlagTable(), *args, flags);  // switches only: nothing to refuse
  InvokeOptions options;
  if (args->Has("--approve")) options.approved = true;
  if (flags.stream) options.on_output = PrintChunk;
  (*provider)->Warm();  // the child starts now, while the validator starts and validates
  // The tools' names are checked against the validator's import list, so they wait for its
  // start, which the child no longer does (the child's start does not depend on the tools). A
  // refused name ends here, with the child killed unused.
  if (Status s = AddHostTools(*args, **provider, std::move(tools)); !s.ok()) {
    std::cerr << "codeact run: " << s.message() << "\n";
    return kExitUsage;
  }
  // A file is bytes: decoded as CPython would (PEP 263); the provider then takes it as text.
  internal::DecodedSource source = internal::DecodeSourceFile(*code);
  ExecutionResult result;
  if (source.problem) {
    result =
        NotRunResult(Outcome::kValidationFailed, "the code file cannot be decoded; nothing ran");
    result.violations.push_back(std::move(*source.problem));
    result.backend = std::string(BackendName((*provider)->executor().backend()));
    result.isolation = std::string(IsolationName((*provider)->executor().isolation()));
  } else {
    result = (*provider)->Execute(source.text, options);
  }
  if (Status s = validator->started(); !s.ok()) {
    std::cerr << "codeact run: " << s.message() << "\n";
    return kExitUsage;
  }
  PrintResult(result, flags.stream);
  return result.success() ? kExitOk : kExitFailed;
}

}  // namespace codeact::cli
