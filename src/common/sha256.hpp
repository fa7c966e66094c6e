// SHA-256 (FIPS 180-4): the digest that keys and verifies the per-user cache (user_cache.hpp).
#pragma once

#include <string>
#include <string_view>

namespace codeact::internal {

// The digest of `data` as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

}  // namespace codeact::internal
