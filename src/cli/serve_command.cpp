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

constexpr const char* kServeHelp =
    R"(usage: codeact serve [options]

Serves execute_code over HTTP (docs/http.md): POST /v1/execute, the seeds' POST /run,
sessions at /v1/sessions, GET /v1/tools?format=..., GET /healthz (no auth), GET /metrics
(Prometheus text) and MCP Streamable HTTP at /mcp. Prints "codeact serve: listening on
http://HOST:PORT" on stdout once it accepts connections; one JSON access line per request on
stderr. TLS is left to a reverse proxy.

server options:
  --listen HOST:PORT        address to listen on (default 127.0.0.1:8080; port 0 picks one);
                            a non-loopback address needs credentials
  --token-file F            bearer tokens, one per line ('#' comments); logged as line:N
  --jwt-secret-file F       accept JWTs signed HS256 with this secret (at least 16 bytes); exp
                            required, 60 s clock skew; logged by jti or sub
  --jwt-audience A          a JWT's aud must name A
  --max-body-bytes N        largest request body (default 1048576); more -> 413
  --max-concurrent N        runs and session operations at once (default 4)
  --max-queued N            requests waiting for a worker (default 16); more -> 429 Retry-After
  --max-connections N       open connections (default 256); more are closed
  --request-timeout S       seconds to read a request, and a kept-alive connection's idle time
                            (default 30)
  --shutdown-grace S        seconds requests in flight may take after SIGTERM (default 10);
                            then their runs are cancelled
  --allow-origin O          an Origin allowed to call (repeatable; exact, e.g.
                            https://app.example.com); any other Origin -> 403
  --allow-host H            a Host header value allowed (repeatable); default: loopback names
                            on a loopback listener, any elsewhere
  --token-max-concurrent N  runs one caller may have in flight (default 0: no limit) -> 429
  --token-rate R            requests per second one caller may make, each run counted (a batch
                            of N tools/call costs N); default 0: no limit, and 50 without
                            credentials, where every client is one caller -> 429
  --token-burst N           requests a caller may make at once within its rate (default: rate)
  --sessions-per-caller N   sessions (REST, and MCP's named ones) one caller may have open
                            (default: a quarter of --max-sessions, at least 1) -> 429
  --max-mcp-sessions N      MCP sessions (/mcp) held at once (default 1024)
  --mcp-sessions-per-caller N
                            MCP sessions one caller may hold (default: a quarter of
                            --max-mcp-sessions, at least 1); over it initialize -> 429
  --mcp-session-idle S      seconds an MCP session may go unused before it is closed
                            (default 600)
  --io-threads N            threads reading and writing connections (default 2)
  --quiet                   no access lines

Limits: the provider flags (--timeout, --memory-mb, ...) are the server's ceilings. A request
may ask for less ("timeout_s", "limits" in /v1/execute; "timeout" in /run), never more: over a
ceiling is 400 naming it.

provider options:
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

}  // namespace

int CmdServe(const std::vector<std::string>& argv) {
  if (WantsHelp(argv)) {
    std::cout << kServeHelp << ProviderFlagsHelp();
    return kExitOk;
  }
  const int stop_fd = InstallShutdownSignals();
  FlagSpec spec;
  spec.with_value = {"--listen",
                     "--token-file",
                     "--jwt-secret-file",
                     "--jwt-audience",
                     "--max-body-bytes",
                     "--max-concurrent",
                     "--max-queued",
                     "--max-connections",
                     "--request-timeout",
                     "--shutdown-grace",
                     "--allow-origin",
                     "--allow-host",
                     "--token-max-concurrent",
                     "--token-rate",
                     "--token-burst",
                     "--max-mcp-sessions",
                     "--mcp-sessions-per-caller",
                     "--mcp-session-idle",
                     "--sessions-per-caller",
                     "--io-threads"};
  spec.switches = {"--quiet"};
  auto args = Args::Parse(argv, WithProviderFlags(std::move(spec)));
  auto usage = [](const std::string& message) {
    std::cerr << "codeact serve: " << message << "\n";
    return kExitUsage;
  };
  if (!args.ok()) return usage(args.status().message());
  if (!args->positionals().empty()) {
    return usage("unexpected argument \"" + args->positionals()[0] + "\"");
  }

  internal::HttpServiceOptions options;
  if (auto listen = args->Get("--listen")) {
    const std::size_t colon = listen->rfind(':');
    long long port = 0;
    if (colon == std::string::npos || !ParseInt(listen->substr(colon + 1), 0, 65535, port)) {
      return usage("--listen needs HOST:PORT, got \"" + *listen + "\"");
    }
    std::string host = listen->substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    if (host.empty()) return usage("--listen needs a host, got \"" + *listen + "\"");
    options.host = host;
    options.port = static_cast<std::uint16_t>(port);
  }
  struct IntFlag {
    const char* flag;
    long long min;
    long long max;
    std::function<void(long long)> set;
  };
  const IntFlag int_flags[] = {
      {"--max-body-bytes", 1, 1LL << 30,
       [&](long long v) { options.max_body_bytes = static_cast<std::size_t>(v); }},
      {"--max-concurrent", 1, 1024,
       [&](long long v) { options.max_concurrent = static_cast<int>(v); }},
      {"--max-queued", 0, 100'000,
       [&](long long v) { options.max_queued = static_cast<std::size_t>(v); }},
      {"--max-connections", 1, 100'000,
       [&](long long v) { options.max_connections = static_cast<int>(v); }},
      {"--token-max-concurrent", 0, 1024,
       [&](long long v) { options.token_max_concurrent = static_cast<int>(v); }},
      {"--max-mcp-sessions", 1, 1'000'000,
       [&](long long v) { options.max_mcp_sessions = static_cast<std::size_t>(v); }},
      {"--mcp-sessions-per-caller", 1, 1'000'000,
       [&](long long v) { options.mcp_sessions_per_caller = static_cast<std::size_t>(v); }},
      {"--io-threads", 1, 64, [&](long long v) { options.io_threads = static_cast<int>(v); }},
  };
  for (const IntFlag& f : int_flags) {
    if (auto text = args->Get(f.flag)) {
      long long v = 0;
      if (!ParseInt(*text, f.min, f.max, v)) {
        return usage(std::string(f.flag) + " needs an integer from " + std::to_string(f.min) +
                     " to " + std::to_string(f.max) + ", got \"" + *text + "\"");
      }
      f.set(v);
    }
  }
  struct SecondsFlag {
    const char* flag;
    double min;
    std::function<void(double)> set;
  };
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000)); };
  const SecondsFlag second_flags[] = {
      {"--request-timeout", 0.1, [&](double s) { options.request_timeout = ms(s); }},
      {"--shutdown-grace", 0, [&](double s) { options.shutdown_grace = ms(s); }},
      {"--mcp-session-idle", 1, [&](double s) { options.mcp_session_idle = ms(s); }},
      {"--token-rate", 0, [&](double s) { options.token_rate_per_s = s; }},
      {"--token-burst", 0, [&](double s) { options.token_burst = s; }},
  };
  for (const SecondsFlag& f : second_flags) {
    if (auto text = args->Get(f.flag)) {
      double v = 0;
      if (!ParseSeconds(*text, f.min, v)) {
        return usage(std::string(f.flag) + " needs a number from " + std::to_string(f.min) +
                     " to 86400, got \"" + *text + "\"");
      }
      f.set(v);
    }
  }
  options.allowed_origins = args->GetAll("--allow-origin");
  options.allowed_hosts = args->GetAll("--allow-host");
  options.access_log = !args->Has("--quiet");
  if (args->Has("--approve")) options.invoke.approved = true;

  internal::Authenticator auth;
  if (auto file = args->Get("--token-file")) {
    auto tokens = internal::Authenticator::ReadTokenFile(*file);
    if (!tokens.ok()) return usage(tokens.status().message());
    auth.SetTokens(*tokens);
  }
  if (auto file = args->Get("--jwt-secret-file")) {
    auto secret = internal::Authenticator::ReadSecretFile(*file);
    if (!secret.ok()) return usage(secret.status().message());
    internal::JwtSettings jwt;
    jwt.secret = std::move(*secret);
    jwt.audience = args->Get("--jwt-audience");
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
  options.sessions_per_caller = std::max(1, max_sessions / 4);
  if (auto text = args->Get("--sessions-per-caller")) {
    long long v = 0;
    if (!ParseInt(*text, 1, 4096, v)) {
      return usage("--sessions-per-caller needs an integer from 1 to 4096, got \"" + *text + "\"");
    }
    options.sessions_per_caller = static_cast<int>(v);
  }
  (*provider)->Warm();
  return internal::RunHttpService(*provider, std::move(auth), std::move(options), stop_fd);
}

}  // namespace codeact::cli
