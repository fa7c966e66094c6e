// A ValidationPolicy as the validator package itself takes it (validator/policy.py's
// POLICY_KEYS): what a request frame carries to a child that validates its code itself. Unlike
// the policy file's form (ToJson in codeact/json.hpp) it holds the run's own fields too: the
// network tools and the tool names the provider filled in.
#pragma once

#include <boost/json.hpp>

#include "codeact/policy.hpp"

namespace codeact::internal {

boost::json::object PolicyForValidator(const ValidationPolicy& policy);

}  // namespace codeact::internal
