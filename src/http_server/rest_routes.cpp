// RestRoutes (rest_routes.hpp): runs, sessions, the tool definition and metrics over REST.
#include "http_server/rest_routes.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <variant>

#include "codeact/json.hpp"
#include "common/ascii.hpp"
#include "common/sha256.hpp"
#include "common/utf8.hpp"
#include "json/serialize.hpp"
#include "limits/limit_table.hpp"
#include "provider/client_sessions.hpp"

namespace codeact::internal {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

// The limits of one run: the server's, with what the body asks for (never above a ceiling).
std::variant<ExecutionLimits, std::string> RequestLimits(const json::object& body,
                                                         const ExecutionLimits& ceilings,
                                                         bool* any) {
  ExecutionLimits limits = ceilings;
  *any = false;
  if (const json::value* t = body.if_contains("timeout_s")) {
    if (!t->is_number()) return std::string("timeout_s must be a number of seconds");
    const double seconds = t->to_number<double>();
    if (!std::isfinite(seconds) || seconds <= 0) return std::string("timeout_s must be positive");
    const double ms = seconds * 1000;
    if (ms > static_cast<double>(ceilings.wall_timeout_ms)) {
      return "timeout_s " + SerializeJson(*t) + " is over the server's ceiling wall_timeout_ms = " +
             std::to_string(ceilings.wall_timeout_ms) + " ms";
    }
    limits.wall_timeout_ms = std::max<std::int64_t>(1, std::llround(ms));
    *any = true;
  }
  if (const json::value* l = body.if_contains("limits")) {
    if (!l->is_object()) return std::string("limits must be an object");
    for (const auto& [key, value] : l->as_object()) {
      const LimitSpec* spec = nullptr;
      for (const LimitSpec& s : LimitTable()) {
        if (s.name == key) spec = &s;
      }
      if (spec == nullptr) return "limits." + std::string(key) + " is not a limit";
      if (!value.is_int64() && !value.is_uint64()) {
        return "limits." + std::string(key) + " must be an integer (" + std::string(spec->unit) +
               ")";
      }
      const bool big =
          value.is_uint64() && value.as_uint64() > static_cast<std::uint64_t>(INT64_MAX);
      const std::int64_t v = big ? INT64_MAX : value.to_number<std::int64_t>();
      const std::int64_t ceiling = ceilings.*(spec->member);
      if (big || v > ceiling) {
        return "limits." + std::string(key) + " = " + SerializeJson(value) +
               " is over the server's ceiling " + std::string(key) + " = " +
               std::to_string(ceiling) + " " + std::string(spec->unit);
      }
      limits.*(spec->member) = v;
      *any = true;
    }
  }
  if (*any) {
    if (Status s = CheckLimits(limits); !s.ok()) return s.message();
  }
  return limits;
}

http::status StatusFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      return http::status::not_found;
    case StatusCode::kResourceExhausted:
      return http::status::too_many_requests;
    case StatusCode::kInvalidArgument:
      return http::status::bad_request;
    case StatusCode::kFailedPrecondition:
      return http::status::conflict;
    default:
      return http::status::service_unavailable;
  }
}

// The seeds' /run reply, {ok, returncode, stdout, stderr, error}, from /v1/execute's.
Reply SeedReply(Reply r) {
  auto parsed = ExecutionResultFromJson(r.body);
  if (!parsed.ok()) return r;
  const ExecutionResult& result = *parsed;
  json::value error = nullptr;
  if (!result.success()) {
    if (result.error) {
      error = result.error->type + ": " + result.error->message;
    } else {
      error = std::string(OutcomeName(result.outcome)) +
              (result.message.empty() ? "" : ": " + result.message);
    }
  }
  r.body = SerializeJson(json::object{{"ok", result.success()},
                                      {"returncode", result.exit_code},
                                      {"stdout", result.stdout_text},
                                      {"stderr", result.stderr_text},
                                      {"error", error}});
  return r;
}

// Accept: text/event-stream asks for a run's output as it comes (docs/http.md, Streaming).
bool WantsEvents(const HttpRequest& req) {
  return AsciiLower(std::string(req[http::field::accept])).find("text/event-stream") !=
         std::string::npos;
}

// The run's output as SSE events on the response: "event: stdout" or "stderr", the chunk as a
// JSON string in `data` (a chunk may hold CR, LF or bytes that are not UTF-8, which an SSE data
// line cannot carry as they are).
OutputCallback OutputEvents(const EventSink& events) {
  return [events](const OutputChunk& chunk) {
    events("event: " + std::string(OutputStreamKindName(chunk.stream)) +
           "\ndata: " + SerializeJson(json::value(SanitizeUtf8(chunk.data))) + "\n\n");
  };
}

}  // namespace

Routed RestRoutes::Dispatch(const HttpRequest& req, const std::string& path,
                            const std::string& query, const CallerIdentity& caller,
                            RequestInfo& info) {
  const http::verb method = req.method();
  if (path == "/v1/execute" || path == "/run") {
    info.route = path;
    if (method != http::verb::post) return {MethodNotAllowed("POST")};
    auto body = context_.BodyObject(req, false);
    if (auto* r = std::get_if<Reply>(&body)) return {std::move(*r)};
    return path == "/run" ? SeedRun(std::get<json::object>(body), caller)
                          : Execute(std::get<json::object>(body), caller, WantsEvents(req));
  }
  if (path == "/v1/tools") {
    info.route = path;
    if (method != http::verb::get) return {MethodNotAllowed("GET")};
    return Tools(query);
  }
  if (path == "/metrics") {
    info.route = path;
    if (method != http::verb::get) return {MethodNotAllowed("GET")};
    return Metrics();
  }
  if (path == "/v1/sessions" || path.rfind("/v1/sessions/", 0) == 0) {
    return Sessions(req, path, caller, info);
  }
  return context_.Refuse(
      ErrorReply(http::status::not_found, "not_found", "no such route: " + path.substr(0, 200)));
}

// /v1/sessions (GET lists, POST opens) and /v1/sessions/{id}[/execute|/pause|/resume].
Routed RestRoutes::Sessions(const HttpRequest& req, const std::string& path,
                            const CallerIdentity& caller, RequestInfo& info) {
  const http::verb method = req.method();
  if (path == "/v1/sessions") {
    info.route = path;
    if (method == http::verb::get) return ListSessions(caller);
    if (method != http::verb::post) return {MethodNotAllowed("GET, POST")};
    auto body = context_.BodyObject(req, true);
    if (auto* r = std::get_if<Reply>(&body)) return {std::move(*r)};
    if (!std::get<json::object>(body).empty()) {
      return context_.BadRequest("POST /v1/sessions takes an empty object");
    }
    return OpenSession(caller);
  }
  constexpr std::string_view kSessions = "/v1/sessions/";
  const std::string rest = path.substr(kSessions.size());
  const std::size_t slash = rest.find('/');
  const std::string id = rest.substr(0, slash);
  const std::string action = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (action.empty()) {
    info.route = "/v1/sessions/{id}";
    if (method != http::verb::delete_) return {MethodNotAllowed("DELETE")};
    return CloseSession(id, caller);
  }
  if (action != "execute" && action != "pause" && action != "resume") {
    return context_.Refuse(ErrorReply(http::status::not_found, "not_found", "no such route"));
  }
  info.route = "/v1/sessions/{id}/" + action;
  if (method != http::verb::post) return {MethodNotAllowed("POST")};
  auto body = context_.BodyObject(req, action != "execute");
  if (auto* r = std::get_if<Reply>(&body)) return {std::move(*r)};
  if (action == "execute") {
    json::object& o = std::get<json::object>(body);
    if (o.contains("session")) return context_.BadRequest("the session is named by the path");
    o["session"] = id;
    return Execute(o, caller, WantsEvents(req));
  }
  return PauseResume(id, action == "pause", caller);
}

Routed RestRoutes::Metrics() {
  ServeGauges g;
  g.sessions_open = context_.provider()->OpenSessionCount();
  g.runs_in_flight = context_.pool().running();
  g.runs_queued = context_.pool().queued();
  g.worker_pool_size = context_.options().max_concurrent;
  g.queue_capacity = static_cast<std::int64_t>(context_.options().max_queued);
  g.connections_open = context_.connections().load();
  Reply r;
  r.body = context_.metrics().Render(g);
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  return {std::move(r)};
}

Routed RestRoutes::Tools(const std::string& query) {
  const std::string format_name = QueryValue(query, "format").value_or("openai");
  const auto format = ParseDefinitionFormat(format_name);
  if (!format) {
    return context_.BadRequest("format is openai, openai-responses, anthropic or mcp, got \"" +
                               format_name.substr(0, 100) + "\"");
  }
  ClientSessions describer(context_.provider());  // its definition includes the "session" argument
  json::error_code ec;
  json::value definition = ParseJson(describer.Definition(*format), ec);
  if (ec) return {ErrorReply(http::status::internal_server_error, "internal", "bad definition")};
  return {JsonReply(http::status::ok,
                    json::object{{"tools", json::array{std::move(definition)}},
                                 {"instructions", context_.provider()->Instructions()}})};
}

Routed RestRoutes::Execute(const json::object& body, const CallerIdentity& caller, bool stream) {
  for (const auto& [key, value] : body) {
    if (key != "code" && key != "session" && key != "timeout_s" && key != "limits") {
      return context_.BadRequest("unknown field \"" + std::string(key).substr(0, 100) +
                                 "\" (fields: code, session, timeout_s, limits)");
    }
  }
  const json::value* code = body.if_contains("code");
  if (code == nullptr || !code->is_string()) {
    return context_.BadRequest("\"code\" (a string) is required");
  }
  std::shared_ptr<Session> session;
  if (const json::value* s = body.if_contains("session")) {
    if (!s->is_string()) return context_.BadRequest("\"session\" must be a session id (a string)");
    session = sessions_.Find(std::string(s->as_string()), caller.owner);
    if (!session) {
      return context_.Refuse(ErrorReply(
          http::status::not_found, "session_not_found",
          "no session \"" + std::string(s->as_string()).substr(0, 100) + "\" of this caller"));
    }
  }
  bool any = false;
  auto limits = RequestLimits(body, context_.ceilings(), &any);
  if (auto* message = std::get_if<std::string>(&limits)) return context_.BadRequest(*message);
  if (session && any) {
    return context_.BadRequest(
        "a session's runs take the session's limits: timeout_s and limits are refused with "
        "session");
  }
  auto slot = context_.RunSlot(caller);
  if (auto* r = std::get_if<Reply>(&slot)) return context_.Refuse(std::move(*r));
  Routed routed;
  routed.slot = std::get<std::shared_ptr<void>>(slot);
  const ExecutionLimits run_limits = std::get<ExecutionLimits>(limits);
  routed.work = [this, caller, session, any, run_limits, stream,
                 code_text = std::string(code->as_string())](const CancellationToken& cancel) {
    InvokeOptions invoke = context_.options().invoke;
    invoke.cancel = cancel;
    const EventSink* events = stream ? CurrentEventSink() : nullptr;
    if (events != nullptr) invoke.on_output = OutputEvents(*events);
    invoke.tenant = caller.owner;  // warm children and zygotes per caller (docs/warm-pool.md)
    const std::shared_ptr<CodeActProvider>& provider = context_.provider();
    ExecutionResult result;
    if (session) {
      result = session->Execute(code_text, invoke);
    } else if (any) {
      RunSnapshot snapshot = provider->Snapshot();
      snapshot.limits = run_limits;
      // Equal fingerprints may share warm state (provider.hpp): the request's limits are part
      // of this run's.
      snapshot.fingerprint =
          Sha256Hex(snapshot.fingerprint + "|request-limits|" + LimitKey(run_limits, false));
      result = provider->Execute(code_text, snapshot, invoke);
    } else {
      result = provider->Execute(code_text, invoke);
    }
    result = context_.Record(std::move(result), caller);
    Reply r;
    r.body = ToJson(result);
    r.outcome = std::string(OutcomeName(result.outcome));
    if (stream) {
      r.content_type = "text/event-stream";
      r.body = "event: result\ndata: " + r.body + "\n\n";
    }
    return r;
  };
  return routed;
}

// The seeds' shape: {lang: "python", code, timeout (seconds)} -> {ok, returncode, stdout,
// stderr, error}.
Routed RestRoutes::SeedRun(const json::object& body, const CallerIdentity& caller) {
  for (const auto& [key, value] : body) {
    if (key != "lang" && key != "code" && key != "timeout") {
      return context_.BadRequest("unknown field \"" + std::string(key).substr(0, 100) +
                                 "\" (fields: lang, code, timeout)");
    }
  }
  const json::value* lang = body.if_contains("lang");
  if (lang == nullptr || !lang->is_string() || lang->as_string() != "python") {
    return context_.BadRequest("\"lang\" must be \"python\": this server runs python only");
  }
  const json::value* code = body.if_contains("code");
  if (code == nullptr || !code->is_string()) {
    return context_.BadRequest("\"code\" (a string) is required");
  }
  json::object execute{{"code", *code}};
  if (const json::value* t = body.if_contains("timeout")) {
    if (!t->is_number()) return context_.BadRequest("\"timeout\" must be a number of seconds");
    const double seconds = t->to_number<double>();
    if (!std::isfinite(seconds) || seconds <= 0) {
      return context_.BadRequest("\"timeout\" must be a positive number of seconds");
    }
    if (seconds * 1000 > static_cast<double>(context_.ceilings().wall_timeout_ms)) {
      return context_.BadRequest("timeout " + SerializeJson(*t) +
                                 " is over the server's ceiling wall_timeout_ms = " +
                                 std::to_string(context_.ceilings().wall_timeout_ms) + " ms");
    }
    execute["timeout_s"] = *t;
  }
  Routed routed = Execute(execute, caller, /*stream=*/false);
  if (!routed.work) return routed;
  auto run = std::move(routed.work);
  routed.work = [run](const CancellationToken& cancel) { return SeedReply(run(cancel)); };
  return routed;
}

Routed RestRoutes::OpenSession(const CallerIdentity& caller) {
  Routed routed;
  routed.work = [this, caller](const CancellationToken&) {
    const std::string id = "ses_" + RandomHex(16);
    auto session = context_.caller_sessions().Open(
        caller.owner, [&] { return context_.provider()->OpenSession(SessionOptions{id}); });
    if (!session.ok()) {
      Reply r =
          ErrorReply(StatusFor(session.status()), "session_refused", session.status().message());
      if (r.status == http::status::too_many_requests) r.headers.emplace_back("Retry-After", "5");
      return r;
    }
    sessions_.Add(RestSession{id, caller.owner, *session});
    Reply r = JsonReply(http::status::created, json::object{{"session", id}}, "created");
    r.headers.emplace_back("Location", "/v1/sessions/" + id);
    return r;
  };
  return routed;
}

Routed RestRoutes::ListSessions(const CallerIdentity& caller) {
  json::array list;
  auto seconds = [](std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  };
  for (const RestSession& s : sessions_.List(caller.owner)) {
    list.push_back(json::object{{"session", s.id},
                                {"paused", s.session->paused()},
                                {"created_unix_s", seconds(s.session->created())},
                                {"last_used_unix_s", seconds(s.session->last_used())}});
  }
  return {JsonReply(http::status::ok, json::object{{"sessions", std::move(list)}})};
}

Reply RestRoutes::SessionNotFound(const std::string& id) {
  context_.metrics().CountRejected("session_not_found");
  return ErrorReply(http::status::not_found, "session_not_found",
                    "no session \"" + id.substr(0, 100) + "\" of this caller");
}

Routed RestRoutes::CloseSession(const std::string& id, const CallerIdentity& caller) {
  auto session = sessions_.Remove(id, caller.owner);
  if (!session) return {SessionNotFound(id)};
  Routed routed;
  routed.work = [session, id](const CancellationToken&) {
    session->Close();
    return JsonReply(http::status::ok, json::object{{"session", id}, {"closed", true}}, "closed");
  };
  return routed;
}

Routed RestRoutes::PauseResume(const std::string& id, bool pause, const CallerIdentity& caller) {
  auto session = sessions_.Find(id, caller.owner);
  if (!session) return {SessionNotFound(id)};
  Routed routed;
  routed.work = [session, id, pause](const CancellationToken&) {
    Status s = pause ? session->Pause() : session->Resume();
    if (!s.ok())
      return ErrorReply(StatusFor(s), pause ? "pause_failed" : "resume_failed", s.message());
    return JsonReply(http::status::ok, json::object{{"session", id}, {"paused", session->paused()}},
                     pause ? "paused" : "resumed");
  };
  return routed;
}

}  // namespace codeact::internal
