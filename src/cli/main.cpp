// codeact: the command-line surface. Flags and wiring only; each subcommand lives in its own file.
#include <sys/prctl.h>

#include <cstddef>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/flag_table.hpp"
#include "cli/process_setup.hpp"
#include "codeact_build_config.hpp"
#include "common/status_macros.hpp"
#include "files/scratch_owner.hpp"
#include "mcp_server/log_setup.hpp"

namespace {

// What the options of every command set, parsed as they are taken.
struct LogFlagValues {
  codeact::internal::LogSettings settings;
  bool given = false;
};

const codeact::cli::FlagTable<LogFlagValues>& LogFlagTable() {
  using codeact::Status;
  static const codeact::cli::FlagTable<LogFlagValues> table = {
      {{"--log-level", "L", "info",
        "debug, info, warning, error or off: the lowest level of the log lines on stderr (the MCP "
        "server's, and the library's warnings)"},
       [](const std::string& v, LogFlagValues& t) {
         CODEACT_ASSIGN_OR_RETURN(t.settings.level, codeact::internal::ParseLogLevel(v));
         t.given = true;
         return Status::Ok();
       }},
      {{"--log-format", "F", "text",
        "text or json: one JSON object per line, {\"time\",\"level\",\"component\",\"message\"}"},
       [](const std::string& v, LogFlagValues& t) {
         CODEACT_ASSIGN_OR_RETURN(t.settings.format, codeact::internal::ParseLogFormat(v));
         t.given = true;
         return Status::Ok();
       }},
  };
  return table;
}

// Takes the log flags (as "--flag value" or "--flag=value", anywhere before a lone "--") out of
// `args` and applies them. False, with the message printed, on a bad value.
bool TakeLogFlags(std::vector<std::string>& args) {
  LogFlagValues values;
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    bool taken = false;
    for (const auto& row : LogFlagTable()) {
      const std::string& flag = row.doc.name;
      std::optional<std::string> value;
      if (a == flag) {
        if (i + 1 >= args.size()) {
          std::cerr << "codeact: " << flag << " needs a value\n";
          return false;
        }
        value = args[++i];
      } else if (a.rfind(flag + "=", 0) == 0) {
        value = a.substr(flag.size() + 1);
      }
      if (!value) continue;
      if (codeact::Status s = row.set(*value, values); !s.ok()) {
        std::cerr << "codeact: " << s.message() << "\n";
        return false;
      }
      taken = true;
    }
    if (!taken) rest.push_back(a);
  }
  args = std::move(rest);
  if (values.given) codeact::internal::ApplyLogSettings(values.settings);
  return true;
}

}  // namespace

std::vector<codeact::cli::FlagDoc> codeact::cli::GlobalFlagDocs() {
  std::vector<FlagDoc> docs = DocsOf(LogFlagTable());
  docs.push_back({"--version", "", "", "print the version and exit"});
  return docs;
}

int main(int argc, char** argv) {
  using namespace codeact::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!TakeLogFlags(args)) return kExitUsage;
  if (args.empty()) {
    std::cerr << MainUsage();
    return kExitUsage;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    std::cout << "codeact " << codeact::internal::kVersion << "\n";
    return kExitOk;
  }
  // Nothing another process of the same uid starts (a run on a non-root host) may read this
  // process's memory, environment or fds through /proc.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const std::string command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  RaiseOpenFileLimit();
  // What a codeact process that died (SIGKILL, a crash) left in the scratch directory goes, on
  // a thread of its own while the command goes on (listing a /tmp of a few hundred entries on
  // ext4 was ~0.25 ms of a one-shot run's start), joined before main returns; a live one's
  // directories are left alone (files/scratch_owner.hpp).
  std::jthread sweep;
  if (command != "--help" && command != "-h" && command != "help") {
    sweep = std::jthread([base = codeact::internal::ScratchBaseDir()] {
      (void)codeact::internal::RemoveDeadScratch(base);
    });
  }
  if (const Command* c = FindCommand(command)) return c->run(rest);
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << MainUsage();
    return kExitOk;
  }
  std::cerr << "codeact: unknown command \"" << command << "\"\n" << MainUsage();
  return kExitUsage;
}
