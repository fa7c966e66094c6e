#include "egress/address_policy.hpp"

#include <array>
#include <boost/asio/ip/address.hpp>
#include <cstdint>

namespace codeact::internal {
namespace {

namespace ip = boost::asio::ip;

struct V4Range {
  std::uint32_t base;
  int prefix;
  const char* kind;
};

constexpr std::uint32_t V4(int a, int b, int c, int d) {
  return (static_cast<std::uint32_t>(a) << 24) | (static_cast<std::uint32_t>(b) << 16) |
         (static_cast<std::uint32_t>(c) << 8) | static_cast<std::uint32_t>(d);
}

// IANA's special-purpose IPv4 registry, less the documentation ranges (not routed, but not a
// way into anything either) and with "this network" and the reserved block named as such.
constexpr std::array<V4Range, 12> kV4Ranges = {{
    {V4(0, 0, 0, 0), 8, "unspecified"},
    {V4(10, 0, 0, 0), 8, "private"},
    {V4(100, 64, 0, 0), 10, "carrier-grade NAT"},
    {V4(127, 0, 0, 0), 8, "loopback"},
    {V4(169, 254, 0, 0), 16, "link-local"},
    {V4(172, 16, 0, 0), 12, "private"},
    {V4(192, 0, 0, 0), 24, "reserved"},
    {V4(192, 168, 0, 0), 16, "private"},
    {V4(198, 18, 0, 0), 15, "reserved"},
    {V4(224, 0, 0, 0), 4, "multicast"},
    {V4(240, 0, 0, 0), 4, "reserved"},  // includes 255.255.255.255, the broadcast address
    {V4(192, 88, 99, 0), 24, "reserved"},
}};

std::optional<std::string> V4Kind(std::uint32_t a) {
  for (const V4Range& r : kV4Ranges) {
    const std::uint32_t mask = r.prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - r.prefix);
    if ((a & mask) == r.base) return std::string(r.kind);
  }
  return std::nullopt;
}

std::optional<std::string> V6Kind(const ip::address_v6& a) {
  const ip::address_v6::bytes_type b = a.to_bytes();
  if (a.is_v4_mapped()) return V4Kind(a.to_v4().to_uint());
  bool zero_prefix = true;  // ::/96, IPv4-compatible (deprecated) and :: and ::1
  for (int i = 0; i < 12; ++i) zero_prefix = zero_prefix && b[i] == 0;
  if (a.is_unspecified()) return "unspecified";
  if (a.is_loopback()) return "loopback";
  if (zero_prefix) {
    const std::uint32_t v4 = (std::uint32_t{b[12]} << 24) | (std::uint32_t{b[13]} << 16) |
                             (std::uint32_t{b[14]} << 8) | std::uint32_t{b[15]};
    if (auto kind = V4Kind(v4)) return kind;
    return "reserved";  // IPv4-compatible addresses are deprecated: nothing routes them
  }
  if ((b[0] & 0xfe) == 0xfc) return "unique local";                // fc00::/7
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local";  // fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "private";     // fec0::/10, site-local
  if (b[0] == 0xff) return "multicast";
  // 64:ff9b::/96 (NAT64) carries an IPv4 address a translator reaches for us: judge that one.
  if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) {
    bool zeros = true;
    for (int i = 4; i < 12; ++i) zeros = zeros && b[i] == 0;
    if (zeros) {
      const std::uint32_t v4 = (std::uint32_t{b[12]} << 24) | (std::uint32_t{b[13]} << 16) |
                               (std::uint32_t{b[14]} << 8) | std::uint32_t{b[15]};
      return V4Kind(v4);
    }
  }
  // 2002::/16 (6to4) carries one too, in bytes 2..5.
  if (b[0] == 0x20 && b[1] == 0x02) {
    const std::uint32_t v4 = (std::uint32_t{b[2]} << 24) | (std::uint32_t{b[3]} << 16) |
                             (std::uint32_t{b[4]} << 8) | std::uint32_t{b[5]};
    return V4Kind(v4);
  }
  return std::nullopt;
}

std::optional<ip::address> Parse(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  if (text.find('%') != std::string_view::npos) return std::nullopt;  // no zone ids
  boost::system::error_code ec;
  const ip::address a = ip::make_address(std::string(text), ec);
  if (ec) return std::nullopt;
  return a;
}

}  // namespace

std::optional<std::string> NonPublicAddressKind(std::string_view address) {
  const std::optional<ip::address> a = Parse(address);
  if (!a) return "not an IP address";
  if (a->is_v4()) return V4Kind(a->to_v4().to_uint());
  return V6Kind(a->to_v6());
}

std::optional<std::string> CanonicalAddress(std::string_view text) {
  const std::optional<ip::address> a = Parse(text);
  if (!a) return std::nullopt;
  return a->to_string();
}

}  // namespace codeact::internal
