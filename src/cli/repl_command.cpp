// codeact repl [provider flags]: an interactive loop on one session (session.hpp), a person's way
// to try sessions. Reads a block of code per prompt, runs it in the session, prints what it
// printed, its value or its error, and the outcome when it is not ok.
#include <unistd.h>

#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "cli/provider_flags.hpp"
#include "codeact/json.hpp"

namespace codeact::cli {
namespace {

constexpr const char* kReplProse =
    R"(Runs an interactive loop on one session: every input runs in the same interpreter, so variables,
imports and files are kept from one input to the next. An input is one line; a line ending in ':'
or '\' continues until an empty line. Each input is validated and run under the same limits as
`codeact run` (per input: wall clock, CPU, output, tool calls; per session: memory and disk). An
input that hits a limit ends the interpreter: the next one starts fresh and says so.
End with EOF (Ctrl-D) or `:quit`. With --json every result is printed as its JSON instead.
)";

const FlagTable<bool>& ReplFlagTable() {  // the target: whether to print JSON
  static const FlagTable<bool> table = {
      {{"--json", "", "", "print each result as JSON (one line)"},
       [](const std::string&, bool& json) {
         json = true;
         return Status::Ok();
       }},
  };
  return table;
}

// One input: a line, or lines up to an empty one after a line ending in ':' or '\'.
bool ReadBlock(std::istream& in, bool prompt, std::string& block) {
  block.clear();
  std::string line;
  if (prompt) std::cout << ">>> " << std::flush;
  if (!std::getline(in, line)) return false;
  block = line;
  bool more = !line.empty() && (line.back() == ':' || line.back() == '\\');
  while (more) {
    if (prompt) std::cout << "... " << std::flush;
    if (!std::getline(in, line) || line.empty()) break;
    block += "\n" + line;
  }
  return true;
}

}  // namespace

std::vector<FlagDoc> ReplFlagDocs() { return DocsOf(ReplFlagTable()); }

int CmdRepl(const std::vector<std::string>& argv) {
  bool json = false;
  auto started = StartCommand("repl", kReplProse, argv, ReplFlagTable(), json);
  const Args* args = std::get_if<Args>(&started);
  if (args == nullptr) return std::get<int>(started);
  auto provider = BuildProvider(*args, {.default_pool_size = 0});
  if (!provider.ok()) {
    std::cerr << "codeact repl: " << provider.status().message() << "\n";
    return kExitUsage;
  }
  SessionOptions session_options;
  session_options.name = "repl";
  auto session = (*provider)->OpenSession(session_options);
  if (!session.ok()) {
    std::cerr << "codeact repl: cannot open a session: " << session.status().message() << "\n";
    return kExitFailed;
  }
  InvokeOptions invoke;
  if (args->Has("--approve")) invoke.approved = true;
  const bool prompt = ::isatty(STDIN_FILENO) != 0;
  int last = kExitOk;
  std::string block;
  while (ReadBlock(std::cin, prompt, block)) {
    if (block == ":quit") break;
    if (block.find_first_not_of(" \t") == std::string::npos) continue;
    const ExecutionResult r = (*session)->Execute(block, invoke);
    last = r.success() ? kExitOk : kExitFailed;
    if (json) {
      std::cout << ToJson(r) << std::endl;
      continue;
    }
    std::cout << r.stdout_text;
    std::cerr << r.stderr_text;
    if (r.session_state == SessionState::kRestarted) std::cout << "[a new interpreter]\n";
    if (r.error) {
      std::cout << (r.error->traceback.empty() ? r.error->type + ": " + r.error->message + "\n"
                                               : r.error->traceback);
    } else if (r.output_present) {
      std::cout << r.output_json << "\n";
    }
    if (r.outcome != Outcome::kOk && r.outcome != Outcome::kError) {
      std::cout << "[" << OutcomeName(r.outcome) << "] " << r.message << "\n";
      for (const auto& v : r.violations) {
        std::cout << "  line " << v.line << ": " << v.rule << ": " << v.message << "\n";
      }
    }
    std::cout << std::flush;
  }
  (*session)->Close();
  if (prompt) std::cout << "\n";
  return last;
}

}  // namespace codeact::cli
