// SessionHandleSigner: the session handles of MCP's stateless revision (2026-07-28). That revision
// has no Mcp-Session-Id, so a client that wants state across calls holds a handle the server
// minted: "cs1.<id>.<owner tag>.<mac>", where <id> is 16 random bytes naming the session, <owner
// tag> the first 8 bytes of SHA-256(owner) naming the caller it belongs to, and <mac> the
// HMAC-SHA256 of both under the server's key (all lowercase hex, 118 characters). A handle is
// opaque to the client: one that was forged or altered fails the MAC, one minted for another
// caller fails the owner tag, and both are refused before any session is looked up.
//
// The key is per server: random unless the caller passes one (a restarted server's handles are
// refused, as its sessions are gone anyway). Thread-safe (immutable after construction).
#pragma once

#include <string>
#include <string_view>

#include "codeact/status.hpp"

namespace codeact::internal {

class SessionHandleSigner {
 public:
  static constexpr std::string_view kPrefix = "cs1.";
  static constexpr std::size_t kHandleSize = 118;

  // `key` empty: 32 random bytes.
  explicit SessionHandleSigner(std::string key = {});

  struct Minted {
    std::string id;      // what the server's own table keys the session by
    std::string handle;  // what the client gets and sends back
  };
  // A new session id for `owner`, and its handle.
  Minted Mint(std::string_view owner) const;

  // The session id that `handle` names, when it was minted by this signer for `owner`;
  // INVALID_ARGUMENT for something that is not a handle or whose MAC does not verify (forged or
  // altered), PERMISSION_DENIED for another caller's handle. The messages say which.
  StatusOr<std::string> Open(std::string_view handle, std::string_view owner) const;

  // Whether `value` has a handle's prefix: the client means a handle, not a name for a new one.
  static bool LooksLikeHandle(std::string_view value) { return value.starts_with(kPrefix); }

 private:
  std::string Mac(std::string_view id, std::string_view owner) const;

  std::string key_;
};

}  // namespace codeact::internal
