// The egress tools: http_get, http_post and http_request as HostTools over one EgressClient,
// the way the local backend's code reaches its network targets (`await http_get(url)`). The
// names and the result, {"status": int, "body": str}, are the hyperlight guest's; a refused or
// failed request is ToolError "HttpError" naming what happened.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/tool.hpp"
#include "egress/http_client.hpp"

namespace codeact::internal {

inline constexpr std::array<std::string_view, 3> kEgressToolNames = {"http_get", "http_post",
                                                                     "http_request"};

bool IsEgressToolName(std::string_view name);

// The three tools, sharing `client` (thread-safe: each call is its own exchange).
std::vector<HostTool> MakeEgressTools(std::shared_ptr<const EgressClient> client);

// What the model reads after "Network: " for these targets (BackendTraits::network): the
// targets, the three tools, their result and what is refused.
std::string DescribeEgress(const std::vector<EgressTarget>& targets);

}  // namespace codeact::internal
