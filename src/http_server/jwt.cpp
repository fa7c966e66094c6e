#include "http_server/jwt.hpp"

#include <array>
#include <boost/json.hpp>
#include <cmath>

#include "common/status_macros.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {
namespace json = boost::json;
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

Status Denied(std::string why) { return PermissionDenied("invalid JWT: " + std::move(why)); }

// A JSON object from one base64url part, or why not.
StatusOr<json::object> DecodePart(std::string_view part, std::string_view what) {
  auto bytes = Base64UrlDecode(part);
  if (!bytes) return Denied(std::string(what) + " is not base64url");
  json::error_code ec;
  json::value v = ParseJson(*bytes, ec);
  if (ec || !v.is_object()) return Denied(std::string(what) + " is not a JSON object");
  return std::move(v.as_object());
}

// A NumericDate (seconds, possibly fractional); nothing when absent or not a number.
std::optional<double> NumericDate(const json::object& claims, std::string_view name) {
  const json::value* v = claims.if_contains(name);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  if (v->is_double() && std::isfinite(v->as_double())) return v->as_double();
  return std::nullopt;
}

std::string StringClaim(const json::object& claims, std::string_view name) {
  const json::value* v = claims.if_contains(name);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

std::optional<std::string> Base64UrlDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    const std::size_t index = kAlphabet.find(c);
    if (index == std::string_view::npos) return std::nullopt;
    buffer = (buffer << 6) | static_cast<std::uint32_t>(index);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  // A length of 1 mod 4 cannot come from any byte string; leftover bits must be zero.
  if (text.size() % 4 == 1 || (buffer & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

std::string Base64UrlEncode(std::string_view bytes) {
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(buffer >> bits) & 0x3F]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buffer << (6 - bits)) & 0x3F]);
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  // Every byte is compared whatever differs first; volatile keeps the compiler from stopping at
  // the first difference.
  volatile unsigned char differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    differ = differ | static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return differ == 0;
}

StatusOr<JwtIdentity> VerifyJwt(std::string_view token, const JwtSettings& settings,
                                std::int64_t now_unix_s) {
  const std::size_t dot1 = token.find('.');
  const std::size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return Denied("not three dot-separated parts");
  }
  CODEACT_ASSIGN_OR_RETURN(const json::object header,
                           DecodePart(token.substr(0, dot1), "the header"));
  const json::value* alg = header.if_contains("alg");
  if (alg == nullptr || !alg->is_string()) return Denied("the header has no \"alg\"");
  if (alg->as_string() != "HS256") {
    return Denied("algorithm \"" + std::string(alg->as_string()) +
                  "\" refused (only HS256 is accepted)");
  }
  if (header.contains("crit")) return Denied("a \"crit\" header is not supported");
  if (settings.secret.empty()) return Denied("no secret is configured");

  const std::string_view signing_input = token.substr(0, dot2);
  auto signature = Base64UrlDecode(token.substr(dot2 + 1));
  if (!signature) return Denied("the signature is not base64url");
  const std::string expected = HmacSha256(settings.secret, signing_input);
  if (expected.empty() || !ConstantTimeEquals(*signature, expected)) {
    return Denied("bad signature");
  }

  CODEACT_ASSIGN_OR_RETURN(const json::object claims,
                           DecodePart(token.substr(dot1 + 1, dot2 - dot1 - 1), "the payload"));
  const auto now = static_cast<double>(now_unix_s);
  const auto skew = static_cast<double>(settings.clock_skew_s);
  const std::optional<double> exp = NumericDate(claims, "exp");
  if (!exp) return Denied("\"exp\" is required (a NumericDate)");
  if (now > *exp + skew) return Denied("expired");
  if (claims.contains("nbf")) {
    const std::optional<double> nbf = NumericDate(claims, "nbf");
    if (!nbf) return Denied("\"nbf\" is not a NumericDate");
    if (now + skew < *nbf) return Denied("not valid yet (nbf)");
  }
  if (settings.audience) {
    bool found = false;
    const json::value* aud = claims.if_contains("aud");
    if (aud != nullptr && aud->is_string()) {
      found = aud->as_string() == *settings.audience;
    } else if (aud != nullptr && aud->is_array()) {
      for (const json::value& a : aud->as_array()) {
        if (a.is_string() && a.as_string() == *settings.audience) found = true;
      }
    }
    if (!found) return Denied("\"aud\" does not name this server's audience");
  }
  JwtIdentity identity;
  const std::string jti = StringClaim(claims, "jti");
  const std::string sub = StringClaim(claims, "sub");
  if (jti.empty() && sub.empty()) return Denied("neither \"jti\" nor \"sub\" names the token");
  identity.token_id = !jti.empty() ? "jti:" + jti : "sub:" + sub;
  identity.owner = !sub.empty() ? "sub:" + sub : "jti:" + jti;
  return identity;
}

}  // namespace codeact::internal
