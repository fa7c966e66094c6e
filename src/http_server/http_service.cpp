// RunHttpService (http_service.hpp): the router that admits each request before a route sees it,
// and the listener's lifetime from bind to the end of the shutdown grace. The routes live in
// rest_routes.cpp (REST) and mcp_http.cpp (MCP Streamable HTTP), the connections in
// http_connection.cpp, what they share in serve_context.cpp.
#include "http_server/http_service.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <boost/json.hpp>
#include <iostream>
#include <optional>
#include <thread>

#include "backends/executor_introspection.hpp"
#include "common/beast_names.hpp"
#include "http_server/host_header.hpp"
#include "http_server/http_connection.hpp"
#include "http_server/mcp_http.hpp"
#include "http_server/rest_routes.hpp"
#include "http_server/serve_context.hpp"
#include "mcp_server/mcp_revisions.hpp"

namespace codeact::internal {
namespace {

std::int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The route template of a path, for logs ("/v1/sessions/{id}/execute"); "-" for no route.
std::string RouteLabel(const std::string& path) {
  for (const char* fixed :
       {"/healthz", "/v1/execute", "/run", "/v1/tools", "/metrics", "/v1/sessions", "/mcp"}) {
    if (path == fixed) return path;
  }
  constexpr std::string_view kSessions = "/v1/sessions/";
  if (path.rfind(kSessions, 0) == 0) {
    const std::size_t slash = path.find('/', kSessions.size());
    if (slash == std::string::npos) return "/v1/sessions/{id}";
    const std::string action = path.substr(slash + 1);
    if (action == "execute" || action == "pause" || action == "resume") {
      return "/v1/sessions/{id}/" + action;
    }
  }
  return "-";
}

// The service: what every request passes (Host and Origin, /healthz, credentials, draining,
// the caller's rate, a POST's Content-Type), then /mcp or a REST route.
class Service final : public HttpRouter {
 public:
  Service(std::shared_ptr<CodeActProvider> provider, Authenticator auth, HttpServiceOptions options)
      : context_(std::move(provider), std::move(options)),
        auth_(std::move(auth)),
        rest_(context_),
        mcp_(context_) {}

  ~Service() override { Shutdown(); }

  ServeContext& context() { return context_; }

  void Shutdown() {
    context_.StopPool();
    rest_.CloseAll();
    mcp_.CloseAll();
  }

  // Everything after the connection read a whole request.
  Routed Route(const HttpRequest& req, RequestInfo& info) override {
    const std::string target(req.target());
    const std::size_t q = target.find('?');
    const std::string path = target.substr(0, q);
    const std::string query = q == std::string::npos ? "" : target.substr(q + 1);

    info.route = RouteLabel(path);
    if (auto refused = CheckHostAndOrigin(req)) return context_.Refuse(std::move(*refused));
    // A CORS preflight from an allowed origin carries no credentials: answered before auth.
    if (req.method() == http::verb::options && req.find(http::field::origin) != req.end()) {
      Reply r;
      r.status = http::status::no_content;
      r.headers = CorsHeaders(std::string(req[http::field::origin]), /*preflight=*/true);
      return {std::move(r)};
    }
    if (path == "/healthz") {
      info.route = "/healthz";
      if (req.method() != http::verb::get && req.method() != http::verb::head) {
        return {MethodNotAllowed("GET")};
      }
      if (context_.draining()) {
        return {JsonReply(http::status::service_unavailable, json::object{{"status", "draining"}})};
      }
      if (!QueryValue(query, "detail")) {
        return {JsonReply(http::status::ok, json::object{{"status", "ok"}})};
      }
      // The detail names the level, the environment's notes and what enforces each limit: for
      // callers only, since it describes the host.
      auto caller = Authenticate(req);
      if (!caller.ok()) return {Unauthorized(caller.status())};
      return {JsonReply(http::status::ok, HealthDetail())};
    }

    auto caller = Authenticate(req);
    if (!caller.ok()) return {Unauthorized(caller.status())};
    info.token_id = caller->token_id.substr(0, 128);
    if (context_.draining()) {
      return context_.Refuse(ErrorReply(http::status::service_unavailable, "shutting_down",
                                        "the server is shutting down"));
    }
    if (auto wait = context_.quotas().TakeRequest(caller->owner)) {
      return context_.Refuse(context_.RateRefusal(*wait));
    }
    if (req.method() == http::verb::post) {
      const std::string type = MediaType(req[http::field::content_type]);
      if (type != kJsonMediaType) {
        return context_.Refuse(ErrorReply(http::status::unsupported_media_type,
                                          "unsupported_media_type",
                                          "a POST needs Content-Type: application/json"));
      }
    }
    if (path == "/mcp") {
      info.route = "/mcp";
      return mcp_.Handle(req, *caller);
    }
    return rest_.Dispatch(req, path, query, *caller, info);
  }

 private:
  StatusOr<CallerIdentity> Authenticate(const HttpRequest& req) const {
    const auto authorization = req[http::field::authorization];
    return auth_.Authenticate(std::string_view(authorization.data(), authorization.size()),
                              NowUnix());
  }

  Reply Unauthorized(const Status& why) {
    context_.metrics().CountRejected("unauthorized");
    Reply r = ErrorReply(http::status::unauthorized, "unauthorized", why.message());
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
  }

  // GET /healthz?detail: what `codeact selftest` and `describe --measure` say of this host, said
  // once here instead of in every result's message.
  json::object HealthDetail() const {
    Executor& executor = context_.provider()->executor();
    json::array notes;
    for (const std::string& note : EnvironmentNotes(executor)) notes.emplace_back(note);
    json::object mechanisms;
    for (const LimitMechanism& m : LimitMechanisms(executor)) mechanisms[m.limit] = m.mechanism;
    return json::object{{"status", "ok"},
                        {"isolation", IsolationName(executor.isolation())},
                        {"environment_notes", std::move(notes)},
                        {"limit_mechanisms", std::move(mechanisms)}};
  }

  // DNS rebinding and cross-site requests (MCP "Security Warning"): a foreign Origin or, on a
  // loopback listener, a non-loopback Host name is refused before anything else.
  std::optional<Reply> CheckHostAndOrigin(const HttpRequest& req) const {
    const HttpServiceOptions& options = context_.options();
    const std::string host_value(req[http::field::host]);
    if (host_value.empty()) {
      return ErrorReply(http::status::bad_request, "bad_host", "a request needs a Host header");
    }
    const std::optional<HostHeader> host = ParseHostHeader(host_value);
    if (!host) {
      return ErrorReply(http::status::bad_request, "bad_host",
                        "Host \"" + host_value.substr(0, 200) + "\" is not host[:port]");
    }
    if (!HostAllowed(*host, options.allowed_hosts, IsLoopbackHost(options.host))) {
      return ErrorReply(http::status::forbidden, "forbidden_host",
                        "Host \"" + host_value.substr(0, 200) +
                            "\" is not one this server answers to (--allow-host)");
    }
    const auto origin_field = req.find(http::field::origin);
    if (origin_field != req.end()) {
      const std::string origin(origin_field->value());
      if (!context_.AllowsOrigin(origin)) {
        return ErrorReply(
            http::status::forbidden, "forbidden_origin",
            "Origin \"" + origin.substr(0, 200) + "\" is not allowed (--allow-origin)");
      }
    }
    return std::nullopt;
  }

  ServeContext context_;
  const Authenticator auth_;
  RestRoutes rest_;
  McpOverHttp mcp_;
};

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  beast::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

int RunHttpService(std::shared_ptr<CodeActProvider> provider, Authenticator auth,
                   HttpServiceOptions options, int stop_fd) {
  if (!auth.enabled() && !IsLoopbackHost(options.host)) {
    std::cerr << "codeact serve: refusing to listen on " << options.host
              << " without credentials: give --token-file or --jwt-secret-file, or listen on "
                 "a loopback address\n";
    return 1;
  }
  beast::error_code ec;
  const std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
  const auto address = net::ip::make_address(host, ec);
  if (ec) {
    std::cerr << "codeact serve: --listen needs an IP address or localhost, got \"" << options.host
              << "\"\n";
    return 1;
  }
  auto ioc = std::make_unique<net::io_context>(std::max(1, options.io_threads));
  tcp::acceptor acceptor(net::make_strand(*ioc));
  const tcp::endpoint endpoint(address, options.port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    std::cerr << "codeact serve: cannot listen on " << options.host << ":" << options.port << ": "
              << ec.message() << "\n";
    return 1;
  }
  const auto bound = acceptor.local_endpoint();
  const int io_threads = std::max(1, options.io_threads);
  const auto grace = options.shutdown_grace;

  auto service =
      std::make_unique<Service>(std::move(provider), std::move(auth), std::move(options));
  auto listener =
      std::make_shared<Listener>(*ioc, std::move(acceptor), service->context(), *service);
  listener->Accept();
  std::vector<std::thread> threads;
  for (int i = 0; i < io_threads; ++i) threads.emplace_back([&ioc] { ioc->run(); });
  const std::string shown = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                                    : bound.address().to_string();
  std::cout << "codeact serve: listening on http://" << shown << ":" << bound.port() << std::endl;
  service->context().log().info("listening on {}:{}", shown, bound.port());

  // Until a stop request. Without a stop pipe (no signal handling) it serves until killed.
  for (;;) {
    if (stop_fd < 0) {
      ::pause();
      continue;
    }
    pollfd p{stop_fd, POLLIN, 0};
    const int n = ::poll(&p, 1, -1);
    if (n > 0) break;
    if (n < 0 && errno != EINTR) break;
  }
  char drain[64];
  while (::read(stop_fd, drain, sizeof drain) > 0) {
  }
  service->context().log().info("stopping: no new connections; {} ms for the requests in flight",
                                grace.count());
  service->context().draining() = true;
  listener->Stop();
  if (!service->context().WaitIdle(Clock::now() + grace)) {
    service->context().log().warn("grace period over: cancelling the runs in flight");
    service->context().CancelAllRuns();
    // A cancelled run ends within its kill and drain (a fraction of a second); answering it
    // is bounded by the write timeout.
    (void)service->context().WaitIdle(Clock::now() + std::chrono::seconds(30));
  }
  ioc->stop();
  for (auto& t : threads) t.join();
  // The connections' handlers go with the io_context, before the service they point to.
  listener.reset();
  ioc.reset();
  service->Shutdown();
  service.reset();
  std::cout << std::flush;
  return 0;
}

}  // namespace codeact::internal
