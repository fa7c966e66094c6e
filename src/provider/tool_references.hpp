// Which host tools a code block can call, read from its tokens before it runs: the static half of
// per-tool approval (the bridge refuses a gated tool's calls in a run that was not approved, so
// a reference this misses ends as a ToolError, never as an unapproved call).
//
// A tool is referenced when its name appears as an identifier (`await add(...)`, `f = add`) or
// as a plain string literal (`call_tool("add", ...)`). An upstream MCP server's tool "srv.tool"
// is referenced by `srv.tool`; any other use of the name `srv` references all of srv's tools. The
// names are dynamic, and so every tool counts as referenced, when `call_tool` is used other than as
// `call_tool("<literal>", ...)` (a variable, an f-string, a concatenation, the function passed
// around), when the code uses a name that reaches globals or attributes by string (globals,
// getattr, __dict__, ...), or when it holds a non-ASCII identifier (Python folds those by NFKC, so
// `ａdd` is `add`). Comments and the text of ordinary strings are not code; the inside of f-strings
// is read as code.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace codeact::internal {

struct ToolReferences {
  std::set<std::string> names;  // of `tool_names`, the ones the code names
  bool dynamic = false;         // the code may name any tool
};

ToolReferences FindToolReferences(std::string_view code,
                                  const std::vector<std::string>& tool_names);

}  // namespace codeact::internal
