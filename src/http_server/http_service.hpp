// HttpService: the HTTP server of `codeact serve`, on Boost.Beast (the only Beast/Asio user of
// the CLI): REST runs (/v1/execute, the seeds' /run), sessions owned per caller
// (/v1/sessions...), the tool definition (/v1/tools), /healthz, Prometheus /metrics and MCP
// Streamable HTTP (/mcp). docs/http.md documents every route and status.
//
// How a request flows: a connection's strand reads it (header and body within
// `request_timeout`, the body at most `max_body_bytes`: 413), checks Host and Origin (403: a web
// page must not drive a loopback server), the credentials (401), the caller's request rate
// (429), the Content-Type of a POST (415) and the JSON (400). Cheap routes answer on the strand;
// runs and session work go to a pool of `max_concurrent` workers with a queue of `max_queued`
// (full: 429 with Retry-After). While a run works, the connection watches its socket: a client
// that hangs up cancels the run (outcome `cancelled`). Every response writes one JSON access
// line (request id, token id, route, status, outcome, duration, bytes).
//
// Shutdown (Run's `stop_fd` readable, after SIGTERM/SIGINT): the listener closes, new requests
// on open connections get 503, requests in flight get `shutdown_grace` to finish, then their runs
// are cancelled and answered; every session is closed; Run returns 0.
//
// Internal (codeact::internal); the library's public API does not include it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codeact/limits.hpp"
#include "codeact/provider.hpp"
#include "http_server/auth.hpp"

namespace codeact::internal {

struct HttpServiceOptions {
  std::string host = "127.0.0.1";  // an IP address literal, or "localhost"
  std::uint16_t port = 8080;       // 0: an ephemeral port (Run prints the one bound)
  std::size_t max_body_bytes = 1u << 20;
  int max_concurrent = 4;       // runs and session operations executing at once
  std::size_t max_queued = 16;  // waiting for a worker; more get 429
  int max_connections = 256;    // open connections; more are closed at once
  // Reading one request (its header and body), and the idle time of a kept-alive connection.
  std::chrono::milliseconds request_timeout{30'000};
  std::chrono::milliseconds shutdown_grace{10'000};
  int io_threads = 2;
  // Origins allowed to call (exact "scheme://host[:port]"), besides the loopback origins a
  // loopback listener allows (mcp_server/mcp_revisions.hpp OriginAllowed); a request with any
  // other Origin gets 403. Requests without Origin (not from a browser) are allowed.
  std::vector<std::string> allowed_origins;
  // Host header values (host[:port], case-insensitive) allowed; empty: on a loopback listener
  // only loopback names (localhost, 127.0.0.1, [::1]), elsewhere any.
  std::vector<std::string> allowed_hosts;
  int token_max_concurrent = 0;  // runs per caller at once; 0: no per-caller limit
  // Requests per caller per second, a request that runs code counting each run; 0: no limit.
  // `codeact serve` without credentials defaults it to kAnonymousRunsPerSecond.
  double token_rate_per_s = 0;
  double token_burst = 0;  // the bucket's size; 0: max(1, rate)
  // Sessions one caller may have open: its REST sessions and its MCP sessions' named ones
  // together (`codeact serve`: a quarter of --max-sessions, at least 1); more are 429.
  int sessions_per_caller = 4;
  // MCP sessions (/mcp, Mcp-Session-Id) held at once; one caller's at most (0: a quarter of
  // max_mcp_sessions, at least 1); and how long one may go unused before it is closed. Over
  // either bound `initialize` gets 429 with Retry-After; no other caller's session is evicted.
  std::size_t max_mcp_sessions = 1024;
  std::size_t mcp_sessions_per_caller = 0;
  std::chrono::milliseconds mcp_session_idle{600'000};
  bool access_log = true;  // one JSON line per request on stderr
  InvokeOptions invoke;    // approval for every run (--approve)
};

// The rate of an anonymous server's one caller (every client) unless --token-rate is given.
inline constexpr double kAnonymousRunsPerSecond = 50;

// Whether `host` names a loopback address ("localhost", 127.0.0.0/8, ::1).
bool IsLoopbackHost(const std::string& host);

// Serves until `stop_fd` (a pipe the signal handler writes to) is readable; prints
// "codeact serve: listening on http://HOST:PORT" on stdout once bound. Returns the exit code:
// 0 after a clean shutdown, 1 when it cannot listen (the reason on stderr).
int RunHttpService(std::shared_ptr<CodeActProvider> provider, Authenticator auth,
                   HttpServiceOptions options, int stop_fd);

}  // namespace codeact::internal
