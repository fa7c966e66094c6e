// A flag table: one row per flag of a command, saying its name, metavariable, default, help, what
// it sets and which backend it belongs to. The parser's spec, the `--help` text, the refusal of
// another backend's flags and docs/cli.md all come from the rows, so a flag is written once.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/args.hpp"
#include "codeact/status.hpp"

namespace codeact::cli {

// The backend a flag belongs to: given with the other backend, it is refused, never dropped.
enum class FlagBackend { kAny, kLocal, kHyperlight };

// What a row says, without its setter: what help and the docs are made from.
struct FlagDoc {
  std::string name;          // "--timeout"
  std::string metavar;       // "S"; empty: a switch, which takes no value
  std::string default_text;  // as help shows it ("30", "none"); empty: nothing to say
  std::string help;          // one paragraph; wrapped when printed
  bool repeatable = false;
  FlagBackend backend = FlagBackend::kAny;
  // Said after "--x is for the local backend" when refused: what to use instead, or "".
  std::string instead;
  // The one value the other backend accepts too ("--isolation auto"), or "".
  std::string any_backend_value;
  // An older name, still parsed, that another row's help names: left out of help and the docs.
  bool hidden = false;
};

// One row: its doc and its setter. A setter gets the value ("" for a switch) and the command's
// target; a repeatable flag's setter runs once per value in order, another's for the last value.
template <typename Target>
struct Flag {
  FlagDoc doc;
  std::function<Status(const std::string& value, Target& target)> set;
};

template <typename Target>
using FlagTable = std::vector<Flag<Target>>;

template <typename Target>
std::vector<FlagDoc> DocsOf(const FlagTable<Target>& table) {
  std::vector<FlagDoc> docs;
  for (const auto& row : table) docs.push_back(row.doc);
  return docs;
}

// Adds the rows' names to a parser spec: a row with a metavariable takes a value.
void AddToSpec(const std::vector<FlagDoc>& docs, FlagSpec& spec);

// The rows as help lines: "  --timeout S            wall-clock limit ... (default 30)".
std::string FlagsHelp(const std::vector<FlagDoc>& docs);

// The rows as a Markdown table (flag, default, backend, meaning) for docs/cli.md.
std::string FlagsMarkdown(const std::vector<FlagDoc>& docs);

// INVALID_ARGUMENT when a flag of another backend than `backend` was given.
Status RefuseOtherBackend(const std::vector<FlagDoc>& docs, const Args& args, FlagBackend backend);

// Runs the setters of the flags given, in table order (so that a row may rely on the rows before
// it), stopping at the first error.
template <typename Target>
Status ApplyFlags(const FlagTable<Target>& table, const Args& args, Target& target) {
  for (const auto& row : table) {
    if (row.doc.metavar.empty()) {
      if (!args.Has(row.doc.name)) continue;
      if (Status s = row.set("", target); !s.ok()) return s;
    } else if (row.doc.repeatable) {
      for (const auto& value : args.GetAll(row.doc.name)) {
        if (Status s = row.set(value, target); !s.ok()) return s;
      }
    } else if (auto value = args.Get(row.doc.name)) {
      if (Status s = row.set(*value, target); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

// A number as help shows a default: "30", "1.5", "1048576".
std::string NumberText(double value);

}  // namespace codeact::cli
