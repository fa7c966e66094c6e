// AddressPolicy: which IP addresses the host-side egress client may connect to. An address is
// public, or it is of a kind the client refuses unless the user listed that very address as a
// target host (loopback, private, link-local, ...): a listed name must not become a way into
// the host's own services or its network by resolving (or redirecting) to them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace codeact::internal {

// The kind of a non-public address ("loopback", "private", "link-local", "unspecified",
// "multicast", "reserved", "carrier-grade NAT", "unique local"), or nothing for a public one.
// An IPv4-mapped or IPv4-compatible IPv6 address (::ffff:127.0.0.1, ::127.0.0.1) is judged as
// the IPv4 address it carries. `address` is the textual form (no brackets); text that is not an
// address is "not an IP address".
std::optional<std::string> NonPublicAddressKind(std::string_view address);

// The canonical text of an address (lower-case, compressed IPv6, no brackets), or nothing when
// `text` (brackets allowed) is not an IP address: the form in which a listed address and a
// resolved one are compared.
std::optional<std::string> CanonicalAddress(std::string_view text);

}  // namespace codeact::internal
