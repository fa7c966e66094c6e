// codeact serve [options] [provider flags]: the HTTP service (src/http_server/http_service.hpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/process_setup.hpp"
#include "cli/provider_flags.hpp"
#include "http_server/auth.hpp"
#include "http_server/http_service.hpp"

namespace codeact::cli {
namespace {

constexpr const char* kServeProse =
    R"(Serves execute_code over HTTP (docs/http.md): POST /v1/execute, the seeds' POST /run, sessions
at /v1/sessions, GET /v1/tools?format=..., GET /healthz (no auth; ?detail for callers), GET
/metrics (Prometheus text) and MCP Streamable HTTP at /mcp. Prints "codeact serve: listening on
http://HOST:PORT" on stdout once it accepts connections; one JSON access line per request on
stderr. TLS is left to a reverse proxy.

Limits: the provider flags (--timeout, --memory-mb, ...) are the server's ceilings. A request
may ask for less ("timeout_s", "limits" in /v1/execute; "timeout" in /run), never more: over a
ceiling is 400 naming it.
)";

bool ParseInt(const std::string& text, long long min, long long max, long long& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && out >= min && out <= max;
}

bool ParseSeconds(const std::string& text, double min, double& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(out) &&
         out >= min && out <= 86'400;
}

using Options = internal::HttpServiceOptions;

// What the serve flags set: the service's options, and what is checked once all are read.
struct ServeFlags {
  Options options;
  std::optional<std::string> token_file;
  std::optional<std::string> jwt_secret_file;
  std::optional<std::string> jwt_audience;
  std::optional<int> sessions_per_caller;
};

Flag<ServeFlags> IntRow(std::string flag, long long min, long long max, std::string default_text,
                        std::string help, std::function<void(long long, Options&)> set) {
  return {{flag, "N", std::move(default_text), std::move(help)},
          [=](const std::string& text, ServeFlags& f) {
            long long v = 0;
            if (!ParseInt(text, min, max, v)) {
              return InvalidArgument(flag + " needs an integer from " + std::to_string(min) +
                                     " to " + std::to_string(max) + ", got \"" + text + "\"");
            }
            set(v, f.options);
            return Status::Ok();
          }};
}

Flag<ServeFlags> SecondsRow(std::string flag, std::string metavar, double min,
                            std::string default_text, std::string help,
                            std::function<void(double, ServeFlags&)> set) {
  return {{flag, std::move(metavar), std::move(default_text), std::move(help)},
          [=](const std::string& text, ServeFlags& f) {
            double v = 0;
            if (!ParseSeconds(text, min, v)) {
              return InvalidArgument(flag + " needs a number from " + std::to_string(min) +
                                     " to 86400, got \"" + text + "\"");
            }
            set(v, f);
            return Status::Ok();
          }};
}

std::chrono::milliseconds Ms(double s) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000));
}
std::string Seconds(std::chrono::milliseconds ms) {
  return NumberText(static_cast<double>(ms.count()) / 1000.0);
}

Flag<ServeFlags> TextRow(std::string flag, std::string metavar, std::string help,
                         std::function<void(const std::string&, ServeFlags&)> set,
                         bool repeatable = false) {
  Flag<ServeFlags> row{{flag, std::move(metavar), "", std::move(help)},
                       [set](const std::string& text, ServeFlags& f) {
                         set(text, f);
                         return Status::Ok();
                       }};
  row.doc.repeatable = repeatable;
  return row;
}

Status ListenFlag(const std::string& listen, ServeFlags& f) {
  const std::size_t colon = listen.rfind(':');
  long long port = 0;
  if (colon == std::string::npos || !ParseInt(listen.substr(colon + 1), 0, 65535, port)) {
    return InvalidArgument("--listen needs HOST:PORT, got \"" + listen + "\"");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return InvalidArgument("--listen needs a host, got \"" + listen + "\"");
  f.options.host = host;
  f.options.port = static_cast<std::uint16_t>(port);
  return Status::Ok();
}

// --listen and the credentials.
void AddListenRows(FlagTable<ServeFlags>& t) {
  const Options d;
  t.push_back({{"--listen", "HOST:PORT", d.host + ":" + std::to_string(d.port),
                "address to listen on (port 0 picks one); a non-loopback address needs "
                "credentials"},
               ListenFlag});
  t.push_back(TextRow("--token-file", "F",
                      "bearer tokens, one per line ('#' comments); logged as line:N",
                      [](const std::string& v, ServeFlags& f) { f.token_file = v; }));
  t.push_back(TextRow("--jwt-secret-file", "F",
                      "accept JWTs signed HS256 with this secret (at least 16 bytes); exp "
                      "required, 60 s clock skew; logged by jti or sub",
                      [](const std::string& v, ServeFlags& f) { f.jwt_secret_file = v; }));
  t.push_back(TextRow("--jwt-audience", "A", "a JWT's aud must name A",
                      [](const std::string& v, ServeFlags& f) { f.jwt_audience = v; }));
}

// The service's bounds: sizes, counts, rates and times.
void AddBoundRows(FlagTable<ServeFlags>& t) {
  const Options d;
  t.push_back(IntRow("--max-body-bytes", 1, 1LL << 30, std::to_string(d.max_body_bytes),
                     "largest request body; more -> 413", [](long long v, Options& o) {
                       o.max_body_bytes = static_cast<std::size_t>(v);
                     }));
  t.push_back(IntRow("--max-concurrent", 1, 1024, std::to_string(d.max_concurrent),
                     "runs and session operations at once",
                     [](long long v, Options& o) { o.max_concurrent = static_cast<int>(v); }));
  t.push_back(IntRow("--max-queued", 0, 100'000, std::to_string(d.max_queued),
                     "requests waiting for a worker; more -> 429 Retry-After",
                     [](long long v, Options& o) { o.max_queued = static_cast<std::size_t>(v); }));
  t.push_back(IntRow("--max-connections", 1, 100'000, std::to_string(d.max_connections),
                     "open connections; more are closed",
                     [](long long v, Options& o) { o.max_connections = static_cast<int>(v); }));
  t.push_back(
      IntRow("--token-max-concurrent", 0, 1024, std::to_string(d.token_max_concurrent),
             "runs one caller may have in flight (0: no limit) -> 429",
             [](long long v, Options& o) { o.token_max_concurrent = static_cast<int>(v); }));
  t.push_back(IntRow("--max-mcp-sessions", 1, 1'000'000, std::to_string(d.max_mcp_sessions),
                     "MCP sessions (/mcp) held at once", [](long long v, Options& o) {
                       o.max_mcp_sessions = static_cast<std::size_t>(v);
                     }));
  t.push_back(IntRow(
      "--mcp-sessions-per-caller", 1, 1'000'000, "a quarter of --max-mcp-sessions, at least 1",
      "MCP sessions one caller may hold; over it initialize -> 429",
      [](long long v, Options& o) { o.mcp_sessions_per_caller = static_cast<std::size_t>(v); }));
  t.push_back(IntRow("--io-threads", 1, 64, std::to_string(d.io_threads),
                     "threads reading and writing connections",
                     [](long long v, Options& o) { o.io_threads = static_cast<int>(v); }));
  t.push_back(SecondsRow("--request-timeout", "S", 0.1, Seconds(d.request_timeout),
                         "seconds to read a request, and a kept-alive connection's idle time",
                         [](double s, ServeFlags& f) { f.options.request_timeout = Ms(s); }));
  t.push_back(SecondsRow("--shutdown-grace", "S", 0, Seconds(d.shutdown_grace),
                         "seconds requests in flight may take after SIGTERM; then their runs "
                         "are cancelled",
                         [](double s, ServeFlags& f) { f.options.shutdown_grace = Ms(s); }));
  t.push_back(SecondsRow("--mcp-session-idle", "S", 1, Seconds(d.mcp_session_idle),
                         "seconds an MCP session may go unused before it is closed",
                         [](double s, ServeFlags& f) { f.options.mcp_session_idle = Ms(s); }));
  t.push_back(SecondsRow("--token-rate", "R", 0,
                         "0: no limit, and 50 without credentials, where every client is one "
                         "caller",
                         "requests per second one caller may make, each run counted (a batch "
                         "of N tools/call costs N) -> 429",
                         [](double s, ServeFlags& f) { f.options.token_rate_per_s = s; }));
  t.push_back(SecondsRow("--token-burst", "N", 0, "the rate",
                         "requests a caller may make at once within its rate",
                         [](double s, ServeFlags& f) { f.options.token_burst = s; }));
  t.push_back(TextRow(
      "--allow-origin", "O",
      "an Origin allowed to call (exact, e.g. https://app.example.com); on a loopback listener "
      "loopback origins (http://localhost:*, http://127.0.0.1:*, http://[::1]:*) are allowed "
      "too; any other Origin -> 403",
      [](const std::string& v, ServeFlags& f) { f.options.allowed_origins.push_back(v); }, true));
  t.push_back(TextRow(
      "--allow-host", "H",
      "a Host header value allowed; default: loopback names on a loopback listener, any "
      "elsewhere",
      [](const std::string& v, ServeFlags& f) { f.options.allowed_hosts.push_back(v); }, true));
  t.push_back({{"--sessions-per-caller", "N", "a quarter of --max-sessions, at least 1",
                "sessions (REST, and MCP's named ones) one caller may have open -> 429"},
               [](const std::string& text, ServeFlags& f) {
                 long long v = 0;
                 if (!ParseInt(text, 1, 4096, v)) {
                   return InvalidArgument(
                       "--sessions-per-caller needs an integer from 1 to 4096, got \"" + text +
                       "\"");
                 }
                 f.sessions_per_caller = static_cast<int>(v);
                 return Status::Ok();
               }});
  t.push_back(TextRow("--quiet", "", "no access lines",
                      [](const std::string&, ServeFlags& f) { f.options.access_log = false; }));
}

const FlagTable<ServeFlags>& ServeFlagTable() {
  static const FlagTable<ServeFlags> table = [] {
    FlagTable<ServeFlags> t;
    AddListenRows(t);
    AddBoundRows(t);
    return t;
  }();
  return table;
}

}  // namespace

std::vector<FlagDoc> ServeFlagDocs() { return DocsOf(ServeFlagTable()); }

int CmdServe(const std::vector<std::string>& argv) {
  ServeFlags flags;
  auto started = StartCommand("serve", kServeProse, argv, ServeFlagTable(), flags);
  const Args* args = std::get_if<Args>(&started);
  if (args == nullptr) return std::get<int>(started);
  const int stop_fd = InstallShutdownSignals();
  auto usage = [](const std::string& message) { return UsageError("serve", message); };

  internal::HttpServiceOptions& options = flags.options;
  if (args->Has("--approve")) options.invoke.approved = true;

  internal::Authenticator auth;
  if (const auto& file = flags.token_file) {
    auto tokens = internal::Authenticator::ReadTokenFile(*file);
    if (!tokens.ok()) return usage(tokens.status().message());
    auth.SetTokens(*tokens);
  }
  if (const auto& file = flags.jwt_secret_file) {
    auto secret = internal::Authenticator::ReadSecretFile(*file);
    if (!secret.ok()) return usage(secret.status().message());
    internal::JwtSettings jwt;
    jwt.secret = std::move(*secret);
    jwt.audience = flags.jwt_audience;
    auth.SetJwt(std::move(jwt));
  } else if (args->Has("--jwt-audience")) {
    return usage("--jwt-audience needs --jwt-secret-file");
  }
  // Without credentials every client is the one caller "anonymous": it gets a run rate of its
  // own unless --token-rate says otherwise (0: none), so a page or a local process in a loop
  // cannot start runs without bound.
  if (!auth.enabled() && !args->Has("--token-rate")) {
    options.token_rate_per_s = internal::kAnonymousRunsPerSecond;
  }
  if (!auth.enabled() && !internal::IsLoopbackHost(options.host)) {
    return usage("refusing to listen on " + options.host +
                 " without credentials: give --token-file or --jwt-secret-file, or listen on a "
                 "loopback address");
  }

  auto provider = BuildProvider(*args);
  if (!provider.ok()) return usage(provider.status().message());
  // A quarter of the provider's sessions per caller unless the flag says otherwise
  // (--max-sessions was checked by BuildProvider).
  int max_sessions = SessionSettings{}.max_sessions;
  if (auto text = args->Get("--max-sessions")) max_sessions = static_cast<int>(std::stod(*text));
  options.sessions_per_caller = flags.sessions_per_caller.value_or(std::max(1, max_sessions / 4));
  (*provider)->Warm();
  return internal::RunHttpService(*provider, std::move(auth), std::move(options), stop_fd);
}

}  // namespace codeact::cli
