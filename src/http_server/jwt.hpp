// JWT verification for `codeact serve`: compact JWS tokens signed with HMAC-SHA256 (RFC 7519,
// RFC 7515) and nothing else. `alg` must be exactly "HS256" (so "none", HS384/HS512 and every
// asymmetric algorithm are refused, whatever the signature); a `crit` header is refused; `exp`
// is required; `nbf` is honoured; `aud` (a string or an array of strings) must contain the
// configured audience when one is configured. Times allow a clock skew (60 s by default).
// The signature is checked before any claim is read, and compared in constant time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "codeact/status.hpp"
#include "common/sha256.hpp"  // HmacSha256, which signs and checks the tokens

namespace codeact::internal {

struct JwtSettings {
  std::string secret;                   // the HMAC key, raw bytes
  std::optional<std::string> audience;  // required in `aud` when set
  std::int64_t clock_skew_s = 60;
};

struct JwtIdentity {
  // What logs and the session table call the caller: `jti` when present, else `sub`.
  std::string token_id;
  // Whose sessions these are: `sub` when present, else `jti` (a token without `sub` owns only
  // what it created itself).
  std::string owner;
};

// The verified identity, or PERMISSION_DENIED saying what is wrong (never echoing the token).
StatusOr<JwtIdentity> VerifyJwt(std::string_view token, const JwtSettings& settings,
                                std::int64_t now_unix_s);

// Base64url (RFC 4648 section 5) without padding, as JWS uses it; nothing on a bad character.
std::optional<std::string> Base64UrlDecode(std::string_view text);
std::string Base64UrlEncode(std::string_view bytes);

// Whether `a` and `b` are equal, in time that depends on their lengths only.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace codeact::internal
