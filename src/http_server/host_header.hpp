// HostHeader: a request's Host value taken apart strictly (RFC 9110 §7.2: uri-host [":" port]),
// and the loopback names a loopback listener answers to. Nothing is matched by prefix: a name is
// a loopback literal, `localhost`, or one of the configured names, whole.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace codeact::internal {

struct HostHeader {
  std::string name;  // lower-cased; an IPv6 literal keeps its brackets ("[::1]")
  std::string port;  // digits, or empty when none was given
};

// The host and port of a Host value, or nothing when it is not one: an empty name, a port that
// is not 1 to 5 digits, an unclosed or stray bracket, characters no host name has (space, '@',
// '/', ...). Nothing for an empty value.
std::optional<HostHeader> ParseHostHeader(std::string_view value);

// "localhost", an IPv4 dotted quad in 127.0.0.0/8 (four decimal parts, no leading zeros), or
// "[::1]".
bool IsLoopbackName(const std::string& name);

// Whether a request with this parsed Host may be answered. `allowed` (the --allow-host values,
// "name" or "name:port", any case) replaces the default; empty: on a loopback listener the
// loopback names of IsLoopbackName with any port, elsewhere any host.
bool HostAllowed(const HostHeader& host, const std::vector<std::string>& allowed,
                 bool loopback_listener);

}  // namespace codeact::internal
