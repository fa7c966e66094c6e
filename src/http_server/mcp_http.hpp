// McpOverHttp: MCP Streamable HTTP on the HTTP service's /mcp. A POST carries one JSON-RPC
// message (or a 2025-03-26 batch); the reply is JSON, or one SSE event when the client accepts
// only text/event-stream, or an SSE stream whose progress notifications precede the result when a
// tools/call with a progressToken accepts SSE. `initialize` opens an MCP session (Mcp-Session-Id)
// owned by its caller; every later request must carry it (missing: 400, unknown or another
// caller's: 404) — except a 2026-07-28 request, which is stateless and needs no session. The
// revision's rules (the MCP-Protocol-Version and mirrored headers, `_meta`) are checked first
// (mcp_server/mcp_revisions.hpp); their refusals are JSON-RPC errors. DELETE ends a session;
// GET (a server-initiated stream) is not offered: 405. Each session is an McpServer wired to
// the caller's named execute_code sessions (server/execute_code_wiring.hpp).
//
// Internal (codeact::internal).
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "http_server/http_reply.hpp"
#include "http_server/mcp_sessions.hpp"
#include "http_server/serve_context.hpp"
#include "mcp_server/mcp_revisions.hpp"

namespace codeact::internal {

class McpOverHttp {
 public:
  explicit McpOverHttp(ServeContext& context);

  // A request to /mcp from an admitted caller.
  Routed Handle(const HttpRequest& req, const CallerIdentity& caller);

  // Closes every MCP session (at shutdown, after the pool has stopped).
  void CloseAll() { sessions_.Clear(); }

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

  ServeContext& context_;
  McpSessionTable sessions_;
};

}  // namespace codeact::internal
