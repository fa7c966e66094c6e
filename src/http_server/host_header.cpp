#include "http_server/host_header.hpp"

#include "common/ascii.hpp"

namespace codeact::internal {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// RFC 3986 reg-name and IPv4 characters (unreserved and sub-delims, without '%' encodings,
// which no DNS name needs).
bool IsNameChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c)) return true;
  return std::string_view("-._~!$&'()*+,;=").find(c) != std::string_view::npos;
}

bool IsV6Char(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

bool ValidPort(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  for (char c : port) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

}  // namespace

std::optional<HostHeader> ParseHostHeader(std::string_view value) {
  HostHeader out;
  std::string_view rest;
  if (!value.empty() && value.front() == '[') {
    const std::size_t close = value.find(']');
    if (close == std::string_view::npos || close < 2) return std::nullopt;
    for (char c : value.substr(1, close - 1)) {
      if (!IsV6Char(c)) return std::nullopt;
    }
    out.name = AsciiLower(value.substr(0, close + 1));
    rest = value.substr(close + 1);
  } else {
    const std::size_t colon = value.find(':');
    const std::string_view name = value.substr(0, colon);
    if (name.empty()) return std::nullopt;
    for (char c : name) {
      if (!IsNameChar(c)) return std::nullopt;
    }
    out.name = AsciiLower(name);
    rest = colon == std::string_view::npos ? std::string_view() : value.substr(colon);
  }
  if (!rest.empty()) {
    if (rest.front() != ':' || !ValidPort(rest.substr(1))) return std::nullopt;
    out.port = std::string(rest.substr(1));
  }
  return out;
}

bool IsLoopbackName(const std::string& name) {
  if (name == "localhost" || name == "[::1]") return true;
  // Exactly four decimal parts of 0-255 without leading zeros, the first 127.
  int parts = 0;
  std::size_t i = 0;
  while (i <= name.size()) {
    std::size_t j = i;
    while (j < name.size() && IsDigit(name[j])) ++j;
    const std::size_t len = j - i;
    if (len == 0 || len > 3 || (len > 1 && name[i] == '0')) return false;
    const int value = std::stoi(name.substr(i, len));
    if (value > 255 || (parts == 0 && value != 127)) return false;
    ++parts;
    if (j == name.size()) break;
    if (name[j] != '.' || parts == 4) return false;
    i = j + 1;
  }
  return parts == 4;
}

bool HostAllowed(const HostHeader& host, const std::vector<std::string>& allowed,
                 bool loopback_listener) {
  if (!allowed.empty()) {
    const std::string with_port = host.port.empty() ? host.name : host.name + ":" + host.port;
    for (const std::string& a : allowed) {
      const std::string name = AsciiLower(a);
      if (name == host.name || name == with_port) return true;
    }
    return false;
  }
  return !loopback_listener || IsLoopbackName(host.name);
}

}  // namespace codeact::internal
