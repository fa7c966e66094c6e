#include "http_server/auth.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "common/sha256.hpp"
#include "common/status_macros.hpp"

namespace codeact::internal {
namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

StatusOr<std::string> ReadSmallFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("cannot read the " + std::string(what) + " " + path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string bytes = text.str();
  if (bytes.size() > (1u << 20)) {
    return InvalidArgument("the " + std::string(what) + " " + path + " is over 1 MiB");
  }
  return bytes;
}

}  // namespace

StatusOr<std::vector<std::string>> Authenticator::ReadTokenFile(const std::string& path) {
  CODEACT_ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(path, "token file"));
  std::vector<std::string> tokens;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const std::string token = Trim(line);
    if (token.empty() || token[0] == '#') {
      tokens.emplace_back();  // keeps line numbers: an empty entry matches nothing
      continue;
    }
    for (char c : token) {
      if (std::isspace(static_cast<unsigned char>(c)) ||
          std::iscntrl(static_cast<unsigned char>(c))) {
        return InvalidArgument("token file " + path + " line " + std::to_string(number) +
                               ": a token has whitespace or control characters inside");
      }
    }
    if (token.size() < kMinTokenBytes) {
      return InvalidArgument("token file " + path + " line " + std::to_string(number) +
                             ": a token must be at least " + std::to_string(kMinTokenBytes) +
                             " bytes");
    }
    tokens.push_back(token);
  }
  bool any = false;
  for (const auto& t : tokens) any = any || !t.empty();
  if (!any) return InvalidArgument("token file " + path + " has no token");
  return tokens;
}

StatusOr<std::string> Authenticator::ReadSecretFile(const std::string& path) {
  CODEACT_ASSIGN_OR_RETURN(std::string secret, ReadSmallFile(path, "JWT secret file"));
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  if (!secret.empty() && secret.back() == '\r') secret.pop_back();
  if (secret.size() < kMinSecretBytes) {
    return InvalidArgument("the JWT secret in " + path + " must be at least " +
                           std::to_string(kMinSecretBytes) + " bytes");
  }
  return secret;
}

void Authenticator::SetTokens(const std::vector<std::string>& tokens) {
  token_digests_.clear();
  token_lines_.clear();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].empty()) continue;
    token_digests_.push_back(Sha256Hex(tokens[i]));
    token_lines_.push_back(static_cast<int>(i + 1));
  }
}

StatusOr<CallerIdentity> Authenticator::Authenticate(std::string_view authorization,
                                                     std::int64_t now_unix_s) const {
  if (!enabled()) return CallerIdentity{"anonymous", "anonymous"};
  if (authorization.empty()) return PermissionDenied("missing bearer token");
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size()) return PermissionDenied("malformed Authorization");
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) {
      return PermissionDenied("the Authorization scheme must be Bearer");
    }
  }
  const std::string token = Trim(authorization.substr(kScheme.size()));
  if (token.empty()) return PermissionDenied("missing bearer token");

  // Every digest is compared (no early exit): the time does not say which line matched.
  const std::string digest = Sha256Hex(token);
  int matched_line = 0;
  for (std::size_t i = 0; i < token_digests_.size(); ++i) {
    const bool equal = ConstantTimeEquals(digest, token_digests_[i]);
    matched_line = equal ? token_lines_[i] : matched_line;
  }
  if (matched_line != 0) {
    const std::string id = "line:" + std::to_string(matched_line);
    return CallerIdentity{id, id};
  }
  if (jwt_ && std::count(token.begin(), token.end(), '.') == 2) {
    CODEACT_ASSIGN_OR_RETURN(const JwtIdentity identity, VerifyJwt(token, *jwt_, now_unix_s));
    return CallerIdentity{identity.token_id, identity.owner};
  }
  return PermissionDenied("unknown bearer token");
}

}  // namespace codeact::internal
