#include <string>

#include "common/ascii.hpp"
#include "common/egress_target.hpp"
#include "egress/http_client.hpp"

namespace codeact::internal {
namespace {

constexpr std::size_t kMaxUrlBytes = 8 * 1024;

}  // namespace

std::string EgressUrl::Origin() const {
  return scheme + "://" + host + (port == 0 ? "" : ":" + std::to_string(port));
}

StatusOr<EgressUrl> ParseEgressUrl(std::string_view url) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("\"" + std::string(url.substr(0, 200)) + "\" is not a valid URL: " +
                           why + " (an absolute http:// or https:// URL is needed)");
  };
  if (url.size() > kMaxUrlBytes)
    return bad("longer than " + std::to_string(kMaxUrlBytes) + " bytes");
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return bad("white space, a control character or a non-ASCII byte (percent-encode it)");
    }
  }
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return bad("no scheme");
  const std::string scheme = AsciiLower(url.substr(0, scheme_end));
  if (scheme != "http" && scheme != "https") return bad("the scheme must be http or https");
  std::string_view rest = url.substr(scheme_end + 3);
  if (const std::size_t hash = rest.find('#'); hash != std::string_view::npos) {
    rest = rest.substr(0, hash);
  }
  const std::size_t path_start = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, path_start);
  std::string target =
      path_start == std::string_view::npos ? "/" : std::string(rest.substr(path_start));
  if (target[0] == '?') target = "/" + target;
  if (authority.find('@') != std::string_view::npos) return bad("user information is not allowed");
  if (authority.empty()) return bad("no host");
  // The authority follows the target grammar's TARGET form, where a trailing ":WORD" would
  // read as a method list: what follows the host must be nothing or ":DIGITS".
  const std::size_t host_end = authority.front() == '[' ? authority.find(']') : authority.find(':');
  if (host_end == std::string_view::npos && authority.front() == '[') {
    return bad("a malformed IPv6 address");
  }
  if (host_end != std::string_view::npos) {
    const std::string_view tail = authority.substr(host_end + (authority.front() == '[' ? 1 : 0));
    if (!tail.empty() && (tail.size() < 2 || tail[0] != ':' ||
                          tail.find_first_not_of("0123456789", 1) != std::string_view::npos)) {
      return bad("a malformed port");
    }
  }
  StatusOr<EgressTarget> parsed = ParseEgressTarget(scheme + "://" + std::string(authority));
  if (!parsed.ok()) return bad(parsed.status().message());
  if (!parsed->methods.empty()) return bad("a malformed port");
  EgressUrl out;
  out.scheme = parsed->scheme;
  out.host = parsed->host;
  out.port = parsed->port;
  out.target = std::move(target);
  return out;
}

}  // namespace codeact::internal
