#include "cli/flag_table.hpp"

#include <algorithm>
#include <cstdio>

#include "common/enum_names.hpp"

namespace codeact::cli {
namespace {

constexpr std::size_t kHelpColumn = 25;  // where a flag's help starts
constexpr std::size_t kHelpWidth = 100;  // where a help line ends at the latest

constexpr auto kBackendTexts =
    internal::MakeEnumNames<FlagBackend>("", {{FlagBackend::kAny, ""},
                                              {FlagBackend::kLocal, "local"},
                                              {FlagBackend::kHyperlight, "hyperlight"}});

// The help paragraph with its default and repeatability, as one text.
std::string FullHelp(const FlagDoc& doc) {
  std::string text = doc.help;
  std::vector<std::string> notes;
  if (doc.repeatable) notes.emplace_back("repeatable");
  if (!doc.default_text.empty()) notes.push_back("default " + doc.default_text);
  if (!notes.empty()) {
    text += " (";
    for (std::size_t i = 0; i < notes.size(); ++i) text += (i ? "; " : "") + notes[i];
    text += ")";
  }
  return text;
}

}  // namespace

void AddToSpec(const std::vector<FlagDoc>& docs, FlagSpec& spec) {
  for (const FlagDoc& doc : docs) {
    (doc.metavar.empty() ? spec.switches : spec.with_value).insert(doc.name);
  }
}

std::string FlagsHelp(const std::vector<FlagDoc>& docs) {
  std::string out;
  for (const FlagDoc& doc : docs) {
    if (doc.hidden) continue;
    std::string line = "  " + doc.name + (doc.metavar.empty() ? "" : " " + doc.metavar);
    const std::string backend(kBackendTexts.Name(doc.backend));
    std::string words = (backend.empty() ? "" : backend + ": ") + FullHelp(doc);
    if (line.size() + 1 > kHelpColumn) {
      out += line + "\n";
      line.clear();
    }
    line.resize(kHelpColumn, ' ');
    bool first = true;
    std::size_t start = 0;
    while (start < words.size()) {
      std::size_t end = words.find(' ', start);
      if (end == std::string::npos) end = words.size();
      const std::string word = words.substr(start, end - start);
      if (!first && line.size() + 1 + word.size() > kHelpWidth) {
        out += line + "\n";
        line.assign(kHelpColumn, ' ');
        first = true;
      }
      line += (first ? "" : " ") + word;
      first = false;
      start = end + 1;
    }
    out += line + "\n";
  }
  return out;
}

std::string FlagsMarkdown(const std::vector<FlagDoc>& docs) {
  const auto cell = [](std::string text) {
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string out = "| flag | default | backend | meaning |\n|---|---|---|---|\n";
  for (const FlagDoc& doc : docs) {
    if (doc.hidden) continue;
    const std::string backend(kBackendTexts.Name(doc.backend));
    out += "| `" + cell(doc.name + (doc.metavar.empty() ? "" : " " + doc.metavar)) + "` | " +
           cell(doc.default_text) + " | " + (backend.empty() ? "any" : backend) + " | " +
           cell(doc.help) + (doc.repeatable ? " (repeatable)" : "") + " |\n";
  }
  return out;
}

Status RefuseOtherBackend(const std::vector<FlagDoc>& docs, const Args& args, FlagBackend backend) {
  for (const FlagDoc& doc : docs) {
    if (doc.backend == FlagBackend::kAny || doc.backend == backend) continue;
    const bool given = doc.metavar.empty() ? args.Has(doc.name) : !args.GetAll(doc.name).empty();
    if (!given) continue;
    if (!doc.any_backend_value.empty() && args.Get(doc.name) == doc.any_backend_value) continue;
    return InvalidArgument(doc.name + " is for the " +
                           std::string(kBackendTexts.Name(doc.backend)) + " backend" + doc.instead);
  }
  return Status::Ok();
}

std::string NumberText(double value) {
  char number[32];
  std::snprintf(number, sizeof number, "%.15g", value);
  return number;
}

}  // namespace codeact::cli
