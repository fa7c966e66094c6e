#include "common/egress_target.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "common/ascii.hpp"

namespace codeact::internal {
namespace {

// The methods a target may name: those the Hyperlight SDK parses, less CONNECT and TRACE,
// which it always refuses.
constexpr std::array<std::string_view, 7> kMethods = {"GET",  "POST",    "PUT",  "DELETE",
                                                      "HEAD", "OPTIONS", "PATCH"};
constexpr std::size_t kMaxHostLength = 253;
constexpr std::size_t kMaxLabelLength = 63;

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgument("network target \"" + std::string(text) + "\": " + why +
                         " (the forms are https://HOST[:PORT], http://HOST[:PORT] or HOST, "
                         "optionally followed by :METHOD,METHOD)");
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

// Whether the text after the last ':' is a method list rather than a port or part of an IPv6
// address: it has a letter and neither ']' nor '/'.
bool IsMethodList(std::string_view tail) {
  if (tail.find_first_of("]/") != std::string_view::npos || AllDigits(tail)) return false;
  return true;
}

Status ParseMethods(std::string_view text, std::string_view list, std::vector<std::string>& out) {
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string method = Upper(list.substr(start, comma - start));
    if (method.empty()) return Bad(text, "an empty method in the method list");
    if (method == "CONNECT" || method == "TRACE") {
      return Bad(text, "the method " + method + " is never allowed");
    }
    if (std::find(kMethods.begin(), kMethods.end(), method) == kMethods.end()) {
      return Bad(text, "unknown HTTP method \"" + std::string(list.substr(start, comma - start)) +
                           "\" (known: GET, POST, PUT, DELETE, HEAD, OPTIONS, PATCH)");
    }
    if (std::find(out.begin(), out.end(), method) == out.end()) out.push_back(method);
    start = comma + 1;
  }
  return Status::Ok();
}

bool IsIpv4(std::string_view host) {
  int parts = 0;
  std::size_t start = 0;
  while (start <= host.size()) {
    const std::size_t dot = std::min(host.find('.', start), host.size());
    const std::string_view part = host.substr(start, dot - start);
    if (!AllDigits(part) || part.size() > 3 || std::stoi(std::string(part)) > 255) return false;
    ++parts;
    start = dot + 1;
  }
  return parts == 4;
}

Status CheckHost(std::string_view text, std::string_view host) {
  if (host.empty()) return Bad(text, "no host");
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return Bad(text, "a malformed IPv6 address");
    const std::string_view inner = host.substr(1, host.size() - 2);
    const bool ok = std::all_of(inner.begin(), inner.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
    });
    if (!ok || inner.find(':') == std::string_view::npos)
      return Bad(text, "a malformed IPv6 address");
    return Status::Ok();
  }
  if (host.find('*') != std::string_view::npos)
    return Bad(text, "wildcards are not supported: name each host");
  if (host.size() > kMaxHostLength) return Bad(text, "the host name is too long");
  if (IsIpv4(host)) return Status::Ok();
  std::size_t start = 0;
  while (start <= host.size()) {
    const std::size_t dot = std::min(host.find('.', start), host.size());
    const std::string_view label = host.substr(start, dot - start);
    if (label.empty() || label.size() > kMaxLabelLength || label.front() == '-' ||
        label.back() == '-') {
      return Bad(text, "\"" + std::string(host) + "\" is not a valid host name");
    }
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
        return Bad(text, "\"" + std::string(host) + "\" is not a valid host name");
      }
    }
    start = dot + 1;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<EgressTarget> ParseEgressTarget(std::string_view text) {
  if (text.empty()) return Bad(text, "empty");
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)))
      return Bad(text, "white space or a control character");
  }
  EgressTarget t;
  t.text = std::string(text);
  std::string_view rest = text;
  if (const std::size_t colon = rest.rfind(':');
      colon != std::string_view::npos && IsMethodList(rest.substr(colon + 1))) {
    const std::string_view tail = rest.substr(colon + 1);
    // "https://host" has its last ':' in the scheme: "//host" is not a method list.
    if (tail.empty()) return Bad(text, "an empty method list after ':'");
    if (tail.find("//") == std::string_view::npos) {
      if (Status s = ParseMethods(text, tail, t.methods); !s.ok()) return s;
      rest = rest.substr(0, colon);
    }
  }
  const std::size_t scheme_end = rest.find("://");
  const bool bare = scheme_end == std::string_view::npos;
  if (bare) {
    t.scheme = "https";
  } else {
    t.scheme = AsciiLower(rest.substr(0, scheme_end));
    if (t.scheme != "https" && t.scheme != "http")
      return Bad(text, "the scheme must be https or http");
    rest = rest.substr(scheme_end + 3);
    if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  }
  if (rest.find_first_of("/?#") != std::string_view::npos)
    return Bad(text, "a path, query or fragment is not supported");
  if (rest.find('@') != std::string_view::npos)
    return Bad(text, "user information is not supported");
  std::string_view host = rest;
  std::string_view port;
  const std::size_t bracket = rest.rfind(']');
  const std::size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    if (rest.front() != '[' && rest.find(':') != colon)
      return Bad(text, "an IPv6 address needs brackets");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (Status s = CheckHost(text, host); !s.ok()) return s;
  t.host = AsciiLower(host);
  if (host.size() != rest.size()) {  // a ":PORT" followed the host
    if (bare) {
      return Bad(text, "a bare HOST means https on port 443; for another port write https://" +
                           std::string(host) + ":" + std::string(port) + " or http://" +
                           std::string(host) + ":" + std::string(port));
    }
    if (!AllDigits(port) || port.size() > 5 || std::stoi(std::string(port)) < 1 ||
        std::stoi(std::string(port)) > 65535) {
      return Bad(text, "the port must be a number from 1 to 65535");
    }
    t.port = std::stoi(std::string(port));
    if ((t.scheme == "https" && t.port == 443) || (t.scheme == "http" && t.port == 80)) t.port = 0;
  }
  return t;
}

StatusOr<std::vector<EgressTarget>> ParseEgressTargets(const std::vector<std::string>& texts) {
  std::vector<EgressTarget> out;
  for (const auto& text : texts) {
    StatusOr<EgressTarget> t = ParseEgressTarget(text);
    if (!t.ok()) return t.status();
    out.push_back(std::move(*t));
  }
  return out;
}

}  // namespace codeact::internal

namespace codeact {

std::string EgressTarget::Url() const {
  return scheme + "://" + host + (port == 0 ? "" : ":" + std::to_string(port));
}

std::string EgressTarget::Display() const {
  std::string out = Url() + " (";
  if (methods.empty()) return out + "any method)";
  for (std::size_t i = 0; i < methods.size(); ++i) out += (i ? ", " : "") + methods[i];
  return out + ")";
}

}  // namespace codeact
