// SecureRandomBytes: bytes from the kernel's generator (getrandom), for what must not be guessed:
// the MCP server's signing key, the names of the files it keeps, session handles. A host whose
// generator fails is broken; the process aborts rather than hand out a predictable value.
#pragma once

#include <cstddef>
#include <string>

namespace codeact::internal {

// `n` random bytes.
std::string SecureRandomBytes(std::size_t n);
// `n` random bytes as 2n lowercase hex digits.
std::string SecureRandomHex(std::size_t n);

}  // namespace codeact::internal
