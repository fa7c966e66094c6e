// RestRoutes: the HTTP service's REST routes, for a caller the router has already admitted
// (Host, Origin, credentials, rate and Content-Type checked): runs (/v1/execute, the seeds'
// /run), the caller's sessions (/v1/sessions...), the tool definition (/v1/tools) and Prometheus
// /metrics. docs/http.md documents every route and status.
//
// Internal (codeact::internal).
#pragma once

#include <string>

#include "http_server/http_reply.hpp"
#include "http_server/rest_sessions.hpp"
#include "http_server/serve_context.hpp"

namespace codeact::internal {

class RestRoutes {
 public:
  explicit RestRoutes(ServeContext& context) : context_(context) {}

  // The route for `path` ("/v1/...", "/run", "/metrics"); a 404 for any other path.
  Routed Dispatch(const HttpRequest& req, const std::string& path, const std::string& query,
                  const CallerIdentity& caller, RequestInfo& info);

  // Closes every REST session (at shutdown, after the pool has stopped).
  void CloseAll() { sessions_.CloseAll(); }

 private:
  Routed Sessions(const HttpRequest& req, const std::string& path, const CallerIdentity& caller,
                  RequestInfo& info);
  Routed Metrics();
  Routed Tools(const std::string& query);
  // `stream`: the output goes out as SSE events while the run goes on, the result last.
  Routed Execute(const boost::json::object& body, const CallerIdentity& caller, bool stream);
  Routed SeedRun(const boost::json::object& body, const CallerIdentity& caller);
  Routed OpenSession(const CallerIdentity& caller);
  Routed ListSessions(const CallerIdentity& caller);
  Routed CloseSession(const std::string& id, const CallerIdentity& caller);
  Routed PauseResume(const std::string& id, bool pause, const CallerIdentity& caller);
  Reply SessionNotFound(const std::string& id);

  ServeContext& context_;
  RestSessions sessions_;
};

}  // namespace codeact::internal
