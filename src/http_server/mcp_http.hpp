// McpOverHttp: MCP Streamable HTTP on the HTTP service's /mcp. A POST carries one JSON-RPC
// message (or a 2025-03-26 batch); the reply is JSON, or one SSE event when the client accepts
// only text/event-stream, or an SSE stream whose progress notifications precede the result when a
// tools/call with a progressToken accepts SSE. `initialize` opens an MCP session (Mcp-Session-Id)
// owned by its caller; every later request must carry it (missing: 400, unknown or another
// caller's: 404) — except a 2026-07-28 request, which is stateless and needs no session. The
// revision's rules (the MCP-Protocol-Version and mirrored headers, `_meta`) are checked first
// (mcp_server/mcp_revisions.hpp); their refusals are JSON-RPC errors. DELETE ends a session;
// GET (a server-initiated stream) is not offered: 405. Each session is an McpServer wired to
// the caller's named execute_code sessions (server/execute_code_wiring.hpp). What outlives one
// MCP session is per caller and shared by all of its sessions and stateless requests: the files
// its calls captured (McpFileStore, for resources/read) and the sessions its 2026-07-28 handles
// name (one signing key per server).
//
// Internal (codeact::internal).
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "http_server/http_reply.hpp"
#include "http_server/mcp_sessions.hpp"
#include "http_server/serve_context.hpp"
#include "mcp_server/mcp_file_store.hpp"
#include "mcp_server/mcp_revisions.hpp"
#include "provider/client_sessions.hpp"
#include "provider/session_handles.hpp"

namespace codeact::internal {

class McpOverHttp {
 public:
  explicit McpOverHttp(ServeContext& context);

  // A request to /mcp from an admitted caller.
  Routed Handle(const HttpRequest& req, const CallerIdentity& caller);

  // Closes every MCP session (at shutdown, after the pool has stopped).
  void CloseAll();

 private:
  struct Target;  // the McpServer a request goes to, and the session it opens or holds

  Routed Delete(const std::string& session_id, const CallerIdentity& caller);
  // Takes what the request's runs cost (rate and run slot) into `slot`; a refusal otherwise.
  std::optional<Routed> PayForRuns(const boost::json::value& message, const CallerIdentity& caller,
                                   std::shared_ptr<void>& slot);
  // The revision's rules for one message (mcp_revisions.hpp): its _meta read into `meta`, and
  // the headers that must agree with it; a JSON-RPC refusal otherwise.
  std::optional<Routed> CheckRevision(const HttpRequest& req, const boost::json::value& message,
                                      McpRequestMeta& meta);
  // A request refused by the revision's rules: the JSON-RPC error, with the request's id.
  Routed Refusal(const boost::json::value& message, const McpRpcError& error);
  // The new session of an initialize, a server of its own for a stateless (2026-07-28) request,
  // or the existing session the request names; a refusal otherwise.
  std::optional<Routed> FindTarget(bool is_initialize, bool stateless,
                                   const std::string& session_id, const CallerIdentity& caller,
                                   Target& target);
  // A new session's server and named sessions; registered once its initialize succeeded.
  void NewSession(const CallerIdentity& caller, Target& target);
  // Named sessions of `caller`, held to its share of the provider's sessions.
  std::shared_ptr<ClientSessions> CallerClientSessions(const CallerIdentity& caller);
  // The sessions the caller's handles name (made on first use; a caller with none open is
  // forgotten at the next look-up).
  std::shared_ptr<ClientSessions> HandleSessionsOf(const CallerIdentity& caller);

  ServeContext& context_;
  McpSessionTable sessions_;
  const std::shared_ptr<McpFileStore> files_ = std::make_shared<McpFileStore>();
  const std::shared_ptr<const SessionHandleSigner> signer_ =
      std::make_shared<SessionHandleSigner>();
  std::mutex handle_mu_;
  std::map<std::string, std::shared_ptr<ClientSessions>> handle_sessions_;  // by owner
};

}  // namespace codeact::internal
