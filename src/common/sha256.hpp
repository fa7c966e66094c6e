// SHA-256 (FIPS 180-4): the digest that keys and verifies the per-user cache (user_cache.hpp),
// and its HMAC (RFC 2104), which signs and checks the HTTP service's JWTs (http_server/jwt.hpp).
#pragma once

#include <string>
#include <string_view>

namespace codeact::internal {

// The digest of `data`: 32 bytes, or as 64 lowercase hex digits.
std::string Sha256(std::string_view data);
std::string Sha256Hex(std::string_view data);

// The hex digest by the portable code, whatever the CPU offers, and whether Sha256 uses the
// CPU's SHA instructions instead (x86-64 SHA-NI): for the tests that hold the two together.
std::string PortableSha256Hex(std::string_view data);
bool Sha256UsesCpuInstructions();

// HMAC-SHA256 of `data` under `key`: 32 bytes.
std::string HmacSha256(std::string_view key, std::string_view data);

}  // namespace codeact::internal
