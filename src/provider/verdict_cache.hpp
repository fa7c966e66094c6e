// WithVerdictCache: a Validator in front of another that keeps the reports of accepted code, per
// exact code and whole policy, so that a code block sent again (a retry, an agent's repeated
// probe, a benchmark's print(1)) is not parsed and walked again. The provider puts one in front
// of its validator: a report is a function of the code and the policy (the validator package
// reads nothing else), so a kept report is the decision a new call would make. Rejections are
// not kept: a rejected block is usually rewritten, and a validation that timed out must be tried
// again. Bounded by the bytes it holds (kMaxVerdictCacheBytes), emptied when full. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>

#include "codeact/validator.hpp"

namespace codeact::internal {

inline constexpr std::size_t kMaxVerdictCacheBytes = 4 << 20;  // 4 MiB of code and policies

std::shared_ptr<Validator> WithVerdictCache(std::shared_ptr<Validator> validator);

}  // namespace codeact::internal
