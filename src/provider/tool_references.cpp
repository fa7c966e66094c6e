// A small Python tokenizer, just enough to find names, string literals and call shapes
// (tool_references.hpp).
#include "provider/tool_references.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace codeact::internal {
namespace {

// Names that reach a function by a string or through a namespace: a tool can be called through
// them without its name being written anywhere.
constexpr std::array<std::string_view, 14> kReflectiveNames = {
    "globals",    "locals",       "vars",     "getattr",     "eval",     "exec",       "compile",
    "__import__", "__builtins__", "__dict__", "__globals__", "__main__", "_load_cold", "builtins"};

enum class Kind { kName, kString, kFString, kOp, kEnd };

struct Token {
  Kind kind = Kind::kEnd;
  std::string text;  // a name, an operator character, or a plain string's value (raw)
};

bool IsNameStart(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool IsNameChar(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

class Tokenizer {
 public:
  explicit Tokenizer(std::string_view code) : code_(code) {}

  // Every token of the code, f-string interiors spliced in as tokens of their own.
  std::vector<Token> All() {
    std::vector<Token> out;
    for (Token t = Next(out); t.kind != Kind::kEnd; t = Next(out)) out.push_back(std::move(t));
    return out;
  }

  bool non_ascii_name() const { return non_ascii_name_; }

 private:
  Token Next(std::vector<Token>& out) {
    while (pos_ < code_.size()) {
      const unsigned char c = static_cast<unsigned char>(code_[pos_]);
      if (c == '#') {
        while (pos_ < code_.size() && code_[pos_] != '\n') ++pos_;
      } else if (std::isspace(c) || c == '\\') {
        ++pos_;
      } else if (IsNameStart(c)) {
        const std::size_t start = pos_;
        bool ascii = true;
        while (pos_ < code_.size() && IsNameChar(static_cast<unsigned char>(code_[pos_]))) {
          ascii = ascii && static_cast<unsigned char>(code_[pos_]) < 0x80;
          ++pos_;
        }
        std::string_view name = code_.substr(start, pos_ - start);
        if (pos_ < code_.size() && (code_[pos_] == '\'' || code_[pos_] == '"') &&
            IsStringPrefix(name)) {
          return String(name, out);
        }
        if (!ascii) non_ascii_name_ = true;
        return {Kind::kName, std::string(name)};
      } else if (c == '\'' || c == '"') {
        return String("", out);
      } else {
        ++pos_;
        return {Kind::kOp, std::string(1, static_cast<char>(c))};
      }
    }
    return {Kind::kEnd, ""};
  }

  static bool IsStringPrefix(std::string_view name) {
    if (name.empty() || name.size() > 2) return false;
    std::string lower;
    for (char ch : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (std::string_view p : {"r", "u", "b", "f", "br", "rb", "fr", "rf"}) {
      if (lower == p) return true;
    }
    return false;
  }

  // A string literal at pos_ (on its quote) with `prefix` before it. An f-string's text is
  // tokenized as code, its tokens appended to `out` ahead of the f-string's own token.
  Token String(std::string_view prefix, std::vector<Token>& out) {
    bool raw = false;
    bool formatted = false;
    for (char ch : prefix) {
      raw = raw || ch == 'r' || ch == 'R';
      formatted = formatted || ch == 'f' || ch == 'F';
    }
    const char quote = code_[pos_];
    const bool triple = code_.substr(pos_, 3) == std::string(3, quote);
    pos_ += triple ? 3 : 1;
    std::string value;
    while (pos_ < code_.size()) {
      const char ch = code_[pos_];
      if (ch == '\\' && pos_ + 1 < code_.size()) {
        // Raw or not, a backslash keeps the next character inside the string.
        value += raw ? code_.substr(pos_, 2) : code_.substr(pos_ + 1, 1);
        pos_ += 2;
        continue;
      }
      if (ch == quote && (!triple || code_.substr(pos_, 3) == std::string(3, quote))) {
        pos_ += triple ? 3 : 1;
        break;
      }
      if (ch == '\n' && !triple) break;  // unterminated: the parser rejects it anyway
      value += ch;
      ++pos_;
    }
    if (formatted) {
      Tokenizer inner(value);
      for (Token& t : inner.All()) out.push_back(std::move(t));
      non_ascii_name_ = non_ascii_name_ || inner.non_ascii_name();
      return {Kind::kFString, ""};
    }
    return {Kind::kString, std::move(value)};
  }

  std::string_view code_;
  std::size_t pos_ = 0;
  bool non_ascii_name_ = false;
};

bool IsOp(const std::vector<Token>& tokens, std::size_t i, char op) {
  return i < tokens.size() && tokens[i].kind == Kind::kOp && tokens[i].text[0] == op;
}

}  // namespace

ToolReferences FindToolReferences(std::string_view code,
                                  const std::vector<std::string>& tool_names) {
  ToolReferences refs;
  Tokenizer tokenizer(code);
  const std::vector<Token> tokens = tokenizer.All();
  refs.dynamic = tokenizer.non_ascii_name();
  auto is_tool = [&tool_names](const std::string& name) {
    return std::find(tool_names.begin(), tool_names.end(), name) != tool_names.end();
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (t.kind == Kind::kString && is_tool(t.text)) refs.names.insert(t.text);
    if (t.kind != Kind::kName) continue;
    if (is_tool(t.text)) refs.names.insert(t.text);
    // An upstream MCP server's namespace: `server.tool` names that tool; any other use of
    // `server` (passed around, aliased, getattr) may reach each of its tools.
    const std::string prefix = t.text + ".";
    if (std::any_of(tool_names.begin(), tool_names.end(),
                    [&](const std::string& n) { return n.rfind(prefix, 0) == 0; })) {
      if (IsOp(tokens, i + 1, '.') && i + 2 < tokens.size() && tokens[i + 2].kind == Kind::kName) {
        if (is_tool(prefix + tokens[i + 2].text)) refs.names.insert(prefix + tokens[i + 2].text);
      } else {
        for (const auto& n : tool_names) {
          if (n.rfind(prefix, 0) == 0) refs.names.insert(n);
        }
      }
    }
    if (std::find(kReflectiveNames.begin(), kReflectiveNames.end(), t.text) !=
        kReflectiveNames.end()) {
      refs.dynamic = true;
    }
    if (t.text == "call_tool") {
      // Only call_tool("<literal>", ...) or call_tool("<literal>") names its tool.
      const bool literal = IsOp(tokens, i + 1, '(') && i + 2 < tokens.size() &&
                           tokens[i + 2].kind == Kind::kString &&
                           (IsOp(tokens, i + 3, ',') || IsOp(tokens, i + 3, ')'));
      if (!literal) refs.dynamic = true;
    }
  }
  return refs;
}

}  // namespace codeact::internal
