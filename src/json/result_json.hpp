// An ExecutionResult as a JSON object: what ToJson (codeact/json.hpp) serialises, for a caller
// that embeds the result in a larger document (the MCP result's structuredContent) instead of
// parsing ToJson's text back.
#pragma once

#include <boost/json.hpp>

#include "codeact/execution.hpp"

namespace codeact::internal {

boost::json::object ResultToJsonObject(const ExecutionResult& result);

}  // namespace codeact::internal
