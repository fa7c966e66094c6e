// ParseEgressTarget: the grammar of codeact/egress_target.hpp, from the text a user gives to the
// value a run's snapshot carries; both backends and the CLI's `--allow-domain` parse with it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codeact/egress_target.hpp"
#include "codeact/status.hpp"

namespace codeact::internal {

// The target (its `text` is `text`), or INVALID_ARGUMENT naming the target and what is wrong with
// it.
StatusOr<EgressTarget> ParseEgressTarget(std::string_view text);

// Every target of a list, or the first error.
StatusOr<std::vector<EgressTarget>> ParseEgressTargets(const std::vector<std::string>& texts);

}  // namespace codeact::internal
