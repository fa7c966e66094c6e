// SessionHandleSigner (session_handles.hpp).
#include "provider/session_handles.hpp"

#include <algorithm>

#include "common/secure_random.hpp"
#include "common/sha256.hpp"

namespace codeact::internal {
namespace {

constexpr std::size_t kIdHexDigits = 32;
constexpr std::size_t kOwnerTagHexDigits = 16;
constexpr std::size_t kMacHexDigits = 64;

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Compares without stopping at the first difference: the time must not tell how much of a
// guessed MAC was right.
bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

std::string OwnerTag(std::string_view owner) {
  return Sha256Hex(owner).substr(0, kOwnerTagHexDigits);
}

Status NotAHandle(std::string_view why) {
  return InvalidArgument(
      "the session handle is refused: " + std::string(why) +
      "; pass a handle exactly as a result's \"session\" gave it, or any other name to open a "
      "new session");
}

}  // namespace

SessionHandleSigner::SessionHandleSigner(std::string key)
    : key_(key.empty() ? SecureRandomBytes(32) : std::move(key)) {}

std::string SessionHandleSigner::Mac(std::string_view id, std::string_view owner) const {
  std::string message = "codeact session handle v1\n";
  message.append(id);
  message += '\n';
  message.append(owner);
  return Hex(HmacSha256(key_, message));
}

SessionHandleSigner::Minted SessionHandleSigner::Mint(std::string_view owner) const {
  Minted m;
  m.id = SecureRandomHex(kIdHexDigits / 2);
  m.handle = std::string(kPrefix) + m.id + "." + OwnerTag(owner) + "." + Mac(m.id, owner);
  return m;
}

StatusOr<std::string> SessionHandleSigner::Open(std::string_view handle,
                                                std::string_view owner) const {
  if (!LooksLikeHandle(handle) || handle.size() != kHandleSize) {
    return NotAHandle("it is not one this server minted (wrong form or length)");
  }
  const std::string_view body = handle.substr(kPrefix.size());
  const std::string_view id = body.substr(0, kIdHexDigits);
  const std::string_view tag = body.substr(kIdHexDigits + 1, kOwnerTagHexDigits);
  const std::string_view mac = body.substr(kIdHexDigits + 1 + kOwnerTagHexDigits + 1);
  if (body[kIdHexDigits] != '.' || body[kIdHexDigits + 1 + kOwnerTagHexDigits] != '.' ||
      mac.size() != kMacHexDigits || !IsLowerHex(id) || !IsLowerHex(tag) || !IsLowerHex(mac)) {
    return NotAHandle("it is not one this server minted (wrong form)");
  }
  if (!ConstantTimeEqual(tag, OwnerTag(owner))) {
    return PermissionDenied(
        "the session handle is refused: it belongs to another caller; a session is reachable "
        "only by the caller that opened it");
  }
  if (!ConstantTimeEqual(mac, Mac(id, owner))) {
    return NotAHandle(
        "its signature does not verify (it was altered, forged, or minted by an "
        "earlier run of the server)");
  }
  return std::string(id);
}

}  // namespace codeact::internal
