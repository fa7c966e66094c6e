// Authenticator: who a request of `codeact serve` comes from. Credentials are a bearer token in
// `Authorization: Bearer ...`, checked against a token file (one token per line; blank lines
// and lines starting with '#' are skipped) and/or, for a token of three dot-separated parts, as
// a JWT (jwt.hpp). Every configured token is compared, in constant time, with the SHA-256 of
// the presented one, so neither the match nor its position leaks through timing.
//
// A caller is named by its token id in logs — "line:N" for the Nth line of the token file, or
// the JWT's `jti`/`sub` — never by the token. Sessions belong to the caller's owner (the token
// file's line, the JWT's `sub`).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/status.hpp"
#include "http_server/jwt.hpp"

namespace codeact::internal {

struct CallerIdentity {
  std::string token_id;  // for logs: "line:3", "jti:...", "sub:...", "anonymous"
  std::string owner;     // what owns sessions and quotas
};

class Authenticator {
 public:
  // No credentials: every request is "anonymous" (the server then binds loopback only).
  Authenticator() = default;

  // Reads a token file. INVALID_ARGUMENT for an unreadable file, a file with no token, or a
  // token shorter than kMinTokenBytes or with whitespace inside (the line is named, the token
  // never).
  static StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path);
  // Reads a JWT secret file: its bytes with one trailing newline removed; at least
  // kMinSecretBytes.
  static StatusOr<std::string> ReadSecretFile(const std::string& path);

  static constexpr std::size_t kMinTokenBytes = 8;
  static constexpr std::size_t kMinSecretBytes = 16;

  void SetTokens(const std::vector<std::string>& tokens);
  void SetJwt(JwtSettings settings) { jwt_ = std::move(settings); }

  bool enabled() const { return !token_digests_.empty() || jwt_.has_value(); }

  // The caller of a request with this Authorization header value (empty: none given), or
  // PERMISSION_DENIED saying why (for the 401 body; never containing the token).
  StatusOr<CallerIdentity> Authenticate(std::string_view authorization,
                                        std::int64_t now_unix_s) const;

 private:
  std::vector<std::string> token_digests_;  // SHA-256 hex of each token, by line
  std::vector<int> token_lines_;
  std::optional<JwtSettings> jwt_;
};

}  // namespace codeact::internal
