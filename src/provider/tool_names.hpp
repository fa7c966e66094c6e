// Tool names the generated code could not reach as functions: a name that is a Python keyword,
// a builtin, one of the names the runner defines (call_tool, ToolError, the hyperlight guest's
// http_get/http_post), a dunder, or the top-level name of a module the policy allows. Such a
// tool would be advertised as `await sum(...)` while the call reaches the builtin, so
// registration refuses it (CodeActProvider::AddTool, and a tools file with exit 2).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codeact/status.hpp"

namespace codeact::internal {

// Ok, or InvalidArgument naming what `name` shadows. `allowed_import_patterns` are the
// validator's patterns for the policy in force ("json", "pkg.*", "!name"): each allowed
// pattern's first dotted component is a module name the code may import. Names that are not
// Python identifiers ("fetch-page") shadow nothing: they are called through call_tool.
Status CheckToolName(std::string_view name,
                     const std::vector<std::string>& allowed_import_patterns);

}  // namespace codeact::internal
