// McpOverHttp (mcp_http.hpp): MCP Streamable HTTP sessions on /mcp.
#include "http_server/mcp_http.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "common/ascii.hpp"
#include "json/serialize.hpp"
#include "mcp_server/execute_code_wiring.hpp"
#include "mcp_server/mcp_revisions.hpp"
#include "mcp_server/mcp_server.hpp"
#include "provider/client_sessions.hpp"

namespace codeact::internal {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

McpSessionTable::Limits McpLimits(const HttpServiceOptions& o) {
  McpSessionTable::Limits l;
  l.max_sessions = o.max_mcp_sessions;
  l.per_caller = o.mcp_sessions_per_caller > 0 ? o.mcp_sessions_per_caller
                                               : std::max<std::size_t>(1, o.max_mcp_sessions / 4);
  l.idle = o.mcp_session_idle;
  return l;
}

// How many tools/call a message (or a batch of them) asks for.
std::size_t CountRuns(const json::value& message) {
  std::size_t runs = 0;
  const auto count_call = [&runs](const json::value& m) {
    const json::value* name = m.is_object() ? m.as_object().if_contains("method") : nullptr;
    if (name != nullptr && name->is_string() && name->as_string() == "tools/call") ++runs;
  };
  if (message.is_array()) {
    for (const json::value& m : message.as_array()) count_call(m);
  } else {
    count_call(message);
  }
  return runs;
}

// The HTTP reply carrying the server's JSON-RPC response (none: 202), as JSON or one SSE event.
void FillReply(Reply& r, std::optional<std::string> response, bool sse) {
  if (!response) {
    r.status = http::status::accepted;  // notifications and responses only
    r.body.clear();
    return;
  }
  if (sse) {
    r.content_type = "text/event-stream";
    r.headers.emplace_back("Cache-Control", "no-cache");
    r.body = "event: message\ndata: " + *response + "\n\n";
  } else {
    r.body = std::move(*response);
  }
}

}  // namespace

struct McpOverHttp::Target {
  std::shared_ptr<McpServer> server;
  // For an initialize: the new session's id, its entry and its reserved place in the table.
  std::string new_id;
  McpSessionTable::Entry fresh;
  std::shared_ptr<McpSessionTable::Reservation> place;
  std::shared_ptr<void> in_use;  // the session does not expire while this request works
};

McpOverHttp::McpOverHttp(ServeContext& context)
    : context_(context), sessions_(McpLimits(context.options())) {}

Routed McpOverHttp::Handle(const HttpRequest& req, const CallerIdentity& caller) {
  const std::string session_id(req["Mcp-Session-Id"]);
  if (req.method() == http::verb::delete_) return Delete(session_id, caller);
  if (req.method() != http::verb::post) return {MethodNotAllowed("POST, DELETE")};
  json::error_code ec;
  const json::value message = ParseJson(req.body(), ec);
  if (ec) {
    // JSON-RPC's own parse error, as the stdio server answers it.
    context_.metrics().CountRejected("bad_json");
    Reply r = JsonReply(
        http::status::bad_request,
        json::object{{"jsonrpc", "2.0"},
                     {"id", nullptr},
                     {"error", json::object{{"code", -32700},
                                            {"message", "Parse error: " + JsonErrorText(ec)}}}},
        "bad_json");
    return {std::move(r)};
  }
  const json::value* method =
      message.is_object() ? message.as_object().if_contains("method") : nullptr;
  std::shared_ptr<void> slot;
  if (auto refused = PayForRuns(message, caller, slot)) return std::move(*refused);
  const bool is_initialize =
      method != nullptr && method->is_string() && method->as_string() == "initialize";
  // The revision's rules (mcp_revisions.hpp): the per-request _meta of 2026-07-28, the
  // MCP-Protocol-Version header (400 when unsupported) and the headers mirroring the body.
  McpRequestMeta meta;
  if (auto refused = CheckRevision(req, message, meta)) return std::move(*refused);
  auto target = std::make_shared<Target>();
  if (auto refused = FindTarget(is_initialize, meta.stateless, session_id, caller, *target)) {
    return std::move(*refused);
  }
  const std::string accept = AsciiLower(std::string(req[http::field::accept]));
  const bool sse = accept.find("text/event-stream") != std::string::npos &&
                   accept.find("application/json") == std::string::npos;
  // A client that accepts SSE may hear progress notifications before the result.
  const bool may_stream = accept.find("text/event-stream") != std::string::npos;
  Routed routed;
  routed.work = [this, target, sse, may_stream, stateless = meta.stateless,
                 body = req.body()](const CancellationToken& cancel) {
    std::string outcome;
    std::optional<std::string> response;
    {
      ScopedRunOutcome scope(&outcome);
      const EventSink* events = may_stream ? CurrentEventSink() : nullptr;
      response =
          target->server->HandleMessage(body, cancel, events != nullptr ? *events : EventSink());
    }
    Reply r;
    r.outcome = outcome;
    if (!target->new_id.empty()) {
      // The session exists once initialize succeeded: a failed one leaves nothing behind.
      if (response && response->find("\"error\"") == std::string::npos) {
        sessions_.Commit(target->place, target->new_id, target->fresh, Clock::now());
        r.headers.emplace_back("Mcp-Session-Id", target->new_id);
      }
    }
    // 2026-07-28 over HTTP: a method the server does not implement is 404 with -32601.
    if (stateless && response && response->find("\"code\":-32601") != std::string::npos) {
      r.status = http::status::not_found;
    }
    FillReply(r, std::move(response), sse);
    return r;
  };
  routed.slot = std::move(slot);
  return routed;
}

Routed McpOverHttp::Delete(const std::string& session_id, const CallerIdentity& caller) {
  if (!sessions_.Remove(session_id, caller.owner)) {
    return context_.Refuse(ErrorReply(http::status::not_found, "mcp_session_not_found",
                                      "no MCP session with this Mcp-Session-Id"));
  }
  return {JsonReply(http::status::ok, json::object{{"closed", true}}, "closed")};
}

// Every route that runs code takes the caller's run slot and one of its rate per run: the
// request paid for one in Route, a 2025-03-26 batch pays for the rest of its tools/call.
// McpServer::HandleMessage runs a batch's calls one after another, so one slot holds for all.
std::optional<Routed> McpOverHttp::PayForRuns(const json::value& message,
                                              const CallerIdentity& caller,
                                              std::shared_ptr<void>& slot) {
  const std::size_t runs = CountRuns(message);
  if (runs == 0) return std::nullopt;
  CallerQuotas& quotas = context_.quotas();
  if (quotas.limits_rate() && static_cast<double>(runs) > quotas.burst()) {
    Reply r = ErrorReply(http::status::too_many_requests, "token_rate",
                         "this batch runs code " + std::to_string(runs) +
                             " times, over this caller's burst of " +
                             std::to_string(static_cast<long long>(quotas.burst())) +
                             " runs: send fewer tools/call per batch");
    r.headers.emplace_back("Retry-After", "1");
    return context_.Refuse(std::move(r));
  }
  if (auto wait = quotas.TakeRequest(caller.owner, static_cast<double>(runs - 1))) {
    return context_.Refuse(context_.RateRefusal(*wait));
  }
  auto taken = context_.RunSlot(caller);
  if (auto* r = std::get_if<Reply>(&taken)) return context_.Refuse(std::move(*r));
  slot = std::get<std::shared_ptr<void>>(taken);
  return std::nullopt;
}

std::optional<Routed> McpOverHttp::CheckRevision(const HttpRequest& req, const json::value& message,
                                                 McpRequestMeta& meta) {
  const json::value* params =
      message.is_object() ? message.as_object().if_contains("params") : nullptr;
  if (params != nullptr && params->is_object()) {
    auto read = ReadRequestMeta(params->as_object());
    if (const auto* e = std::get_if<McpRpcError>(&read)) return Refusal(message, *e);
    meta = std::move(std::get<McpRequestMeta>(read));
  }
  const auto header = [&req](std::string_view name) -> std::optional<std::string> {
    const auto it = req.find(name);
    if (it == req.end()) return std::nullopt;
    return std::string(it->value());
  };
  if (auto e = CheckHttpHeaders(
          {header("MCP-Protocol-Version"), header("Mcp-Method"), header("Mcp-Name")}, message,
          meta)) {
    return Refusal(message, *e);
  }
  return std::nullopt;
}

Routed McpOverHttp::Refusal(const json::value& message, const McpRpcError& error) {
  const json::value* id = message.is_object() ? message.as_object().if_contains("id") : nullptr;
  Reply r;
  r.status = static_cast<http::status>(error.http_status);
  r.body = McpErrorLine(id != nullptr ? SerializeJson(*id) : "null", error);
  r.outcome = error.code == kMcpUnsupportedProtocolVersion ? "mcp_unsupported_version"
              : error.code == kMcpHeaderMismatch           ? "mcp_header_mismatch"
                                                           : "mcp_bad_meta";
  return context_.Refuse(std::move(r));
}

std::optional<Routed> McpOverHttp::FindTarget(bool is_initialize, bool stateless,
                                              const std::string& session_id,
                                              const CallerIdentity& caller, Target& target) {
  if (is_initialize) {
    auto [reserved, refusal] = sessions_.Reserve(caller.owner, Clock::now());
    if (refusal) {
      Reply r = ErrorReply(http::status::too_many_requests, refusal->reason, refusal->message);
      r.headers.emplace_back("Retry-After", std::to_string(refusal->retry_after_s));
      return context_.Refuse(std::move(r));
    }
    target.place = std::move(reserved);
    target.new_id = "mcp_" + RandomHex(16);
    NewSession(caller, target);
    return std::nullopt;
  }
  if (stateless) {
    // No session: a server of its own for this one request (its named sessions end with it).
    NewSession(caller, target);
    return std::nullopt;
  }
  if (session_id.empty()) {
    return context_.BadRequest(
        "an MCP request other than initialize needs the Mcp-Session-Id header");
  }
  target.server = sessions_.Use(session_id, caller.owner, Clock::now(), &target.in_use);
  if (!target.server) {
    return context_.Refuse(ErrorReply(http::status::not_found, "mcp_session_not_found",
                                      "no MCP session with this Mcp-Session-Id; initialize again"));
  }
  return std::nullopt;
}

void McpOverHttp::CloseAll() {
  sessions_.Clear();
  std::map<std::string, std::shared_ptr<ClientSessions>> handles;
  {
    std::lock_guard lock(handle_mu_);
    handles.swap(handle_sessions_);
  }
}

std::shared_ptr<ClientSessions> McpOverHttp::CallerClientSessions(const CallerIdentity& caller) {
  return std::make_shared<ClientSessions>(
      context_.provider(), [this, owner = caller.owner](const SessionOptions& session_options) {
        return context_.caller_sessions().Open(
            owner, [&] { return context_.provider()->OpenSession(session_options); });
      });
}

std::shared_ptr<ClientSessions> McpOverHttp::HandleSessionsOf(const CallerIdentity& caller) {
  std::vector<std::shared_ptr<ClientSessions>> idle;  // closed outside the lock
  std::lock_guard lock(handle_mu_);
  for (auto it = handle_sessions_.begin(); it != handle_sessions_.end();) {
    if (it->first != caller.owner && it->second.use_count() == 1 && it->second->OpenCount() == 0) {
      idle.push_back(std::move(it->second));
      it = handle_sessions_.erase(it);
    } else {
      ++it;
    }
  }
  std::shared_ptr<ClientSessions>& own = handle_sessions_[caller.owner];
  if (!own) own = CallerClientSessions(caller);
  return own;
}

void McpOverHttp::NewSession(const CallerIdentity& caller, Target& target) {
  const std::shared_ptr<CodeActProvider>& provider = context_.provider();
  auto sessions = CallerClientSessions(caller);
  McpServerOptions o;
  o.server_name = "codeact";
  o.log_to_stderr = false;  // the access line says what happened
  o.max_line_bytes = context_.options().max_body_bytes;
  o.files = files_;
  o.caller = caller.owner;
  InvokeOptions invoke = context_.options().invoke;
  invoke.tenant = caller.owner;  // warm children and zygotes per caller (docs/warm-pool.md)
  WireExecuteCode(
      o, *provider, sessions, std::move(invoke),
      [this, caller](ExecutionResult result) { return context_.Record(std::move(result), caller); },
      HandleSessions{signer_, caller.owner, HandleSessionsOf(caller)});
  target.server = std::make_shared<McpServer>(std::move(o));
  target.fresh = McpSessionTable::Entry{caller.owner, target.server, sessions};
}

}  // namespace codeact::internal
