// EgressClient: the host-side HTTP(S) client behind the egress tools (http_get, http_post,
// http_request). It sends a request only to a listed target (scheme, host, port and method, as
// codeact/egress_target.hpp describes them), resolves the host once and connects to an address it
// checked (no second lookup for an attacker's DNS to answer differently), refuses non-public
// addresses unless that address is itself a listed host (address_policy.hpp), follows redirects
// only to listed targets, re-checking every hop, verifies TLS certificates against the system
// store and the host name (SNI set), and bounds the response body and the whole exchange's time.
// The only user of Boost.Beast and OpenSSL.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codeact/cancellation.hpp"
#include "codeact/egress_target.hpp"
#include "codeact/status.hpp"

namespace codeact::internal {

// The addresses a host name resolves to, in the resolver's order (textual, no brackets), or an
// error. Production resolves with getaddrinfo; tests inject their own.
using EgressResolver = std::function<StatusOr<std::vector<std::string>>(const std::string& host)>;

struct EgressClientOptions {
  std::vector<EgressTarget> targets;
  // The body of one response, after which the request fails (not truncated: a cut JSON or HTML
  // document would mislead the code).
  std::int64_t max_response_bytes = 1 << 20;
  // One call, from the first lookup to the last byte of the last redirect hop.
  std::int64_t timeout_ms = 30'000;
  // Redirects followed before the call fails; each hop is checked like the first request.
  int max_redirects = 5;
  // Request headers that carry credentials besides Authorization and Cookie (which are always
  // dropped): on a redirect to another origin (scheme, host or port), these are dropped too, so
  // a key meant for one listed service does not follow a redirect to another. Any case.
  std::vector<std::string> cross_origin_strip_headers = {"X-Api-Key", "Proxy-Authorization"};
  // Test hooks, empty in production: a resolver used instead of getaddrinfo, and PEM
  // certificates trusted besides the system store (a test's own CA).
  EgressResolver resolver_for_tests;
  std::string extra_ca_pem_for_tests;
};

struct EgressRequest {
  std::string method = "GET";  // upper-case
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool has_body = false;  // send the body (and Content-Length) even when empty
  // A tighter cap than the client's for this call (the run's frame size); 0: the client's.
  std::int64_t max_response_bytes = 0;
};

struct EgressResponse {
  int status = 0;
  std::string body;       // the bytes as received (identity encoding is asked for)
  std::string final_url;  // after redirects
  std::map<std::string, std::string> headers;  // lower-case names; repeated ones joined by ", "
};

struct EgressModuleApi;

class EgressClient {
 public:
  explicit EgressClient(EgressClientOptions options);
  ~EgressClient();
  EgressClient(const EgressClient&) = delete;
  EgressClient& operator=(const EgressClient&) = delete;

  // The response, or PERMISSION_DENIED for what the targets or the address policy refuse,
  // INVALID_ARGUMENT for a malformed request, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED (the body
  // cap, too many redirects), UNAVAILABLE for a failed lookup, connection or TLS handshake and
  // when `cancel` fires (the run ended); each message names the URL and what happened.
  StatusOr<EgressResponse> Fetch(const EgressRequest& request,
                                 const CancellationToken& cancel = {}) const;

  const EgressClientOptions& options() const { return options_; }

 private:
  // The egress module's client (egress/egress_module_api.hpp); null when the module could not be
  // loaded, and then every Fetch fails with `unavailable_`.
  EgressClientOptions options_;
  const EgressModuleApi* api_ = nullptr;
  void* client_ = nullptr;
  Status unavailable_;
};

// A request URL split into a target's parts and the path with its query ("/" when absent); the
// fragment is dropped. INVALID_ARGUMENT for anything that is not an absolute http(s) URL.
struct EgressUrl {
  std::string scheme;
  std::string host;  // lower-case; IPv6 in brackets
  int port = 0;      // 0: the scheme's default
  std::string target = "/";
  std::string Origin() const;  // scheme://host[:port]
};
StatusOr<EgressUrl> ParseEgressUrl(std::string_view url);

}  // namespace codeact::internal
