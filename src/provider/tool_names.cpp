#include "provider/tool_names.hpp"

#include <algorithm>
#include <array>

namespace codeact::internal {
namespace {

constexpr std::array<std::string_view, 35> kKeywords = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

// dir(builtins) of CPython 3.10 to 3.13 without the underscore names: a builtin of any version
// the child may run, so that a tool name means the same on every interpreter.
constexpr std::string_view kBuiltins[] = {"ArithmeticError",
                                          "AssertionError",
                                          "AttributeError",
                                          "BaseException",
                                          "BaseExceptionGroup",
                                          "BlockingIOError",
                                          "BrokenPipeError",
                                          "BufferError",
                                          "BytesWarning",
                                          "ChildProcessError",
                                          "ConnectionAbortedError",
                                          "ConnectionError",
                                          "ConnectionRefusedError",
                                          "ConnectionResetError",
                                          "DeprecationWarning",
                                          "EOFError",
                                          "Ellipsis",
                                          "EncodingWarning",
                                          "EnvironmentError",
                                          "Exception",
                                          "ExceptionGroup",
                                          "FileExistsError",
                                          "FileNotFoundError",
                                          "FloatingPointError",
                                          "FutureWarning",
                                          "GeneratorExit",
                                          "IOError",
                                          "ImportError",
                                          "ImportWarning",
                                          "IndentationError",
                                          "IndexError",
                                          "InterruptedError",
                                          "IsADirectoryError",
                                          "KeyError",
                                          "KeyboardInterrupt",
                                          "LookupError",
                                          "MemoryError",
                                          "ModuleNotFoundError",
                                          "NameError",
                                          "NotADirectoryError",
                                          "NotImplemented",
                                          "NotImplementedError",
                                          "OSError",
                                          "OverflowError",
                                          "PendingDeprecationWarning",
                                          "PermissionError",
                                          "ProcessLookupError",
                                          "PythonFinalizationError",
                                          "RecursionError",
                                          "ReferenceError",
                                          "ResourceWarning",
                                          "RuntimeError",
                                          "RuntimeWarning",
                                          "StopAsyncIteration",
                                          "StopIteration",
                                          "SyntaxError",
                                          "SyntaxWarning",
                                          "SystemError",
                                          "SystemExit",
                                          "TabError",
                                          "TimeoutError",
                                          "TypeError",
                                          "UnboundLocalError",
                                          "UnicodeDecodeError",
                                          "UnicodeEncodeError",
                                          "UnicodeError",
                                          "UnicodeTranslateError",
                                          "UnicodeWarning",
                                          "UserWarning",
                                          "ValueError",
                                          "Warning",
                                          "ZeroDivisionError",
                                          "abs",
                                          "aiter",
                                          "all",
                                          "anext",
                                          "any",
                                          "ascii",
                                          "bin",
                                          "bool",
                                          "breakpoint",
                                          "bytearray",
                                          "bytes",
                                          "callable",
                                          "chr",
                                          "classmethod",
                                          "compile",
                                          "complex",
                                          "copyright",
                                          "credits",
                                          "delattr",
                                          "dict",
                                          "dir",
                                          "divmod",
                                          "enumerate",
                                          "eval",
                                          "exec",
                                          "exit",
                                          "filter",
                                          "float",
                                          "format",
                                          "frozenset",
                                          "getattr",
                                          "globals",
                                          "hasattr",
                                          "hash",
                                          "help",
                                          "hex",
                                          "id",
                                          "input",
                                          "int",
                                          "isinstance",
                                          "issubclass",
                                          "iter",
                                          "len",
                                          "license",
                                          "list",
                                          "locals",
                                          "map",
                                          "max",
                                          "memoryview",
                                          "min",
                                          "next",
                                          "object",
                                          "oct",
                                          "open",
                                          "ord",
                                          "pow",
                                          "print",
                                          "property",
                                          "quit",
                                          "range",
                                          "repr",
                                          "reversed",
                                          "round",
                                          "set",
                                          "setattr",
                                          "slice",
                                          "sorted",
                                          "staticmethod",
                                          "str",
                                          "sum",
                                          "super",
                                          "tuple",
                                          "type",
                                          "vars",
                                          "zip"};

// What the runner and the hyperlight guest put beside the tools (resources/runner.py,
// resources/hyperlight_guest.py), and the local backend's egress tools (src/egress).
constexpr std::string_view kRunnerNames[] = {"call_tool", "ToolError", "http_get", "http_post",
                                             "http_request"};

bool IsIdentifier(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

template <typename List>
bool Contains(const List& list, std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

}  // namespace

Status CheckToolName(std::string_view name,
                     const std::vector<std::string>& allowed_import_patterns) {
  if (!IsIdentifier(name)) return Status::Ok();
  const std::string quoted = "tool name \"" + std::string(name) + "\" ";
  const std::string rename = "; rename the tool (e.g. \"" + std::string(name) + "_tool\")";
  if (Contains(kKeywords, name)) {
    return InvalidArgument(quoted + "is a Python keyword: `await " + std::string(name) +
                           "(...)` is not valid code" + rename);
  }
  if (Contains(kBuiltins, name)) {
    return InvalidArgument(quoted + "shadows the Python builtin " + std::string(name) +
                           "(): the generated code would call the builtin, not the tool" + rename);
  }
  if (Contains(kRunnerNames, name)) {
    return InvalidArgument(quoted + "is a name the sandbox defines itself" + rename);
  }
  if (name.size() > 4 && name.starts_with("__") && name.ends_with("__")) {
    return InvalidArgument(quoted + "is a dunder name the interpreter uses" + rename);
  }
  for (const auto& pattern : allowed_import_patterns) {
    if (pattern.empty() || pattern.front() == '!') continue;
    const std::string_view top = std::string_view(pattern).substr(0, pattern.find('.'));
    if (top == name) {
      return InvalidArgument(quoted + "is the name of the module " + std::string(name) +
                             ", which the code may import: `import " + std::string(name) +
                             "` would hide the tool" + rename);
    }
  }
  return Status::Ok();
}

}  // namespace codeact::internal
