// The egress module (codeact_egress.so): the TLS client behind EgressClient, the one user of
// OpenSSL and of Boost.Beast on the client side (egress/egress_module_api.hpp says why a module).
#include "egress/http_client.hpp"

#include <netdb.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <chrono>
#include <optional>
#include <set>

#include "common/ascii.hpp"
#include "common/beast_names.hpp"
#include "common/status_macros.hpp"
#include "egress/address_policy.hpp"
#include "egress/egress_module_api.hpp"

namespace codeact::internal {
namespace {

namespace ssl = net::ssl;

constexpr std::size_t kMaxResponseHeaderBytes = 64 * 1024;
constexpr std::size_t kMaxRequestHeaders = 100;
constexpr std::size_t kMaxRequestHeaderBytes = 64 * 1024;

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && AsciiLower(s.substr(0, prefix.size())) == prefix;
}

// Headers the client owns: the code may not set them, as they would change what the request
// means to the server or to a proxy between (framing, the virtual host, the connection).
bool ReservedHeader(const std::string& lower) {
  static const std::set<std::string> kReserved = {"host",
                                                  "content-length",
                                                  "transfer-encoding",
                                                  "connection",
                                                  "upgrade",
                                                  "te",
                                                  "trailer",
                                                  "keep-alive",
                                                  "expect",
                                                  "proxy-authorization",
                                                  "proxy-connection"};
  return kReserved.count(lower) != 0;
}

bool TokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

Status CheckHeaders(const std::vector<std::pair<std::string, std::string>>& headers) {
  if (headers.size() > kMaxRequestHeaders) {
    return InvalidArgument("more than " + std::to_string(kMaxRequestHeaders) + " headers");
  }
  std::size_t total = 0;
  for (const auto& [name, value] : headers) {
    total += name.size() + value.size();
    if (name.empty() || !std::all_of(name.begin(), name.end(), TokenChar)) {
      return InvalidArgument("the header name \"" + name + "\" is not a valid HTTP token");
    }
    for (char c : value) {
      if (c == '\r' || c == '\n' || c == '\0') {
        return InvalidArgument("the value of header \"" + name +
                               "\" contains a line break or a NUL byte");
      }
    }
    if (ReservedHeader(AsciiLower(name))) {
      return InvalidArgument("the header \"" + name +
                             "\" is set by the client itself and cannot be given");
    }
  }
  if (total > kMaxRequestHeaderBytes) {
    return InvalidArgument("the headers exceed " + std::to_string(kMaxRequestHeaderBytes) +
                           " bytes");
  }
  return Status::Ok();
}

int DefaultPort(const std::string& scheme) { return scheme == "https" ? 443 : 80; }

std::string Unbracketed(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[') return host.substr(1, host.size() - 2);
  return host;
}

bool Matches(const EgressTarget& t, const EgressUrl& u, const std::string& method) {
  if (t.scheme != u.scheme || t.host != u.host || t.port != u.port) return false;
  return t.methods.empty() ||
         std::find(t.methods.begin(), t.methods.end(), method) != t.methods.end();
}

std::string Listed(const std::vector<EgressTarget>& targets) {
  std::string out;
  for (const auto& t : targets) out += (out.empty() ? "" : "; ") + t.Display();
  return out.empty() ? "none" : out;
}

// Whether `url` with `method` may be requested: a target with its scheme, host and port that
// lists the method (or lists none).
Status CheckTarget(const std::vector<EgressTarget>& targets, const EgressUrl& url,
                   const std::string& method) {
  bool origin_listed = false;
  for (const auto& t : targets) {
    if (Matches(t, url, method)) return Status::Ok();
    origin_listed =
        origin_listed || (t.scheme == url.scheme && t.host == url.host && t.port == url.port);
  }
  if (origin_listed) {
    return PermissionDenied("the method " + method + " is not allowed for " + url.Origin() +
                            " (listed: " + Listed(targets) + ")");
  }
  return PermissionDenied(url.Origin() +
                          " is not a listed network target (listed: " + Listed(targets) + ")");
}

StatusOr<std::vector<std::string>> SystemResolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  // getaddrinfo cannot be interrupted: the system resolver's own timeouts (resolv.conf) bound it.
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0) {
    return Unavailable("cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  std::vector<std::string> out;
  for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) ==
        0) {
      if (std::find(out.begin(), out.end(), text) == out.end()) out.emplace_back(text);
    }
  }
  ::freeaddrinfo(list);
  if (out.empty()) return Unavailable("cannot resolve " + host + ": no addresses");
  return out;
}

std::string ErrorText(const beast::error_code& ec) {
  std::string text = ec.message();
  if (ec.category() == net::error::get_ssl_category()) {
    // OpenSSL's reason ("certificate verify failed") is what the caller needs.
    if (const char* reason = ERR_reason_error_string(static_cast<unsigned long>(ec.value()))) {
      text = reason;
    }
  }
  return text;
}

struct HopRequest {
  const EgressUrl* url = nullptr;
  std::vector<tcp::endpoint> endpoints;  // checked addresses only
  std::string method;
  const std::vector<std::pair<std::string, std::string>>* headers = nullptr;
  const std::string* body = nullptr;
  bool has_body = false;
  std::uint64_t max_body = 0;
  Clock::time_point deadline;
  ssl::context* tls = nullptr;  // null: plain http
};

struct HopResponse {
  Status status;
  int code = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  std::string connected;  // the address connected to, for messages and tests
};

template <class Stream>
net::awaitable<void> Exchange(Stream& stream, const HopRequest& in, HopResponse& out) {
  beast::error_code ec;
  auto token = net::redirect_error(net::use_awaitable, ec);
  const EgressUrl& url = *in.url;
  http::request<http::string_body> req;
  req.method(http::string_to_verb(in.method));
  req.target(url.target);
  req.version(11);
  req.set(http::field::host, url.port == 0 ? url.host : url.host + ":" + std::to_string(url.port));
  req.set(http::field::user_agent, "codeact-egress");
  req.set(http::field::accept_encoding, "identity");
  req.set(http::field::connection, "close");
  for (const auto& [name, value] : *in.headers) req.insert(name, value);
  if (in.has_body) {
    req.body() = *in.body;
    req.prepare_payload();
  }
  co_await http::async_write(stream, req, token);
  if (ec) {
    out.status =
        Unavailable("sending the request to " + out.connected + " failed: " + ErrorText(ec));
    co_return;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.header_limit(kMaxResponseHeaderBytes);
  parser.body_limit(in.max_body);
  if (in.method == "HEAD") parser.skip(true);
  co_await http::async_read(stream, buffer, parser, token);
  if (ec == http::error::body_limit) {
    out.status = ResourceExhausted("the response body exceeds the cap of " +
                                   std::to_string(in.max_body) + " bytes");
    co_return;
  }
  if (ec == http::error::header_limit) {
    out.status = ResourceExhausted("the response headers exceed " +
                                   std::to_string(kMaxResponseHeaderBytes) + " bytes");
    co_return;
  }
  if (ec) {
    out.status = ec == beast::error::timeout
                     ? DeadlineExceeded("timed out reading the response")
                     : Unavailable("reading the response failed: " + ErrorText(ec));
    co_return;
  }
  auto& res = parser.get();
  out.code = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    std::string name = AsciiLower(field.name_string());
    std::string value(field.value());
    auto [it, inserted] = out.headers.emplace(name, value);
    if (!inserted) it->second += ", " + value;
  }
  out.body = std::move(res.body());
}

net::awaitable<void> RunHop(const HopRequest& in, HopResponse& out) {
  beast::error_code ec;
  auto token = net::redirect_error(net::use_awaitable, ec);
  auto executor = co_await net::this_coro::executor;
  beast::tcp_stream tcp_stream(executor);
  // One deadline for every step: the whole call's.
  tcp_stream.expires_at(in.deadline);
  const tcp::endpoint connected = co_await tcp_stream.async_connect(in.endpoints, token);
  if (ec) {
    std::string tried;
    for (const auto& e : in.endpoints)
      tried += (tried.empty() ? "" : ", ") + e.address().to_string();
    out.status = ec == beast::error::timeout
                     ? DeadlineExceeded("timed out connecting to " + tried)
                     : Unavailable("cannot connect to " + tried + ": " + ErrorText(ec));
    co_return;
  }
  out.connected = connected.address().to_string();
  if (in.tls == nullptr) {
    co_await Exchange(tcp_stream, in, out);
    co_return;
  }
  beast::ssl_stream<beast::tcp_stream> stream(std::move(tcp_stream), *in.tls);
  const std::string host = Unbracketed(in.url->host);
  const bool is_address = CanonicalAddress(host).has_value();
  // SNI for names only (RFC 6066 forbids addresses); the name (or address) is verified against
  // the certificate in every case.
  if (!is_address && !SSL_set_tlsext_host_name(stream.native_handle(), host.c_str())) {
    out.status = Internal("cannot set the TLS server name " + host);
    co_return;
  }
  stream.set_verify_mode(ssl::verify_peer);
  stream.set_verify_callback(ssl::host_name_verification(host));
  co_await stream.async_handshake(ssl::stream_base::client, token);
  if (ec) {
    out.status = ec == beast::error::timeout
                     ? DeadlineExceeded("timed out in the TLS handshake with " + out.connected)
                     : Unavailable("the TLS handshake with " + host + " (" + out.connected +
                                   ") failed: " + ErrorText(ec) +
                                   " (the certificate must be valid for the host name and "
                                   "signed by a trusted authority)");
    co_return;
  }
  co_await Exchange(stream, in, out);
  // No TLS close_notify: the request said Connection: close and the body is complete.
}

bool IsRedirect(int code) {
  return code == 301 || code == 302 || code == 303 || code == 307 || code == 308;
}

// The absolute URL a Location header names, relative to `base`.
std::string ResolveLocation(const EgressUrl& base, const std::string& location) {
  if (StartsWithNoCase(location, "http://") || StartsWithNoCase(location, "https://")) {
    return location;
  }
  if (location.rfind("//", 0) == 0) return base.scheme + ":" + location;
  if (!location.empty() && location[0] == '/') return base.Origin() + location;
  std::string dir = base.target.substr(0, base.target.find('?'));
  dir = dir.substr(0, dir.rfind('/') + 1);
  if (dir.empty()) dir = "/";
  return base.Origin() + dir + location;
}

// What a redirect with status `code` from `from` to `to` keeps of the request.
void FollowRedirect(int code, const EgressUrl& from, const EgressUrl& to,
                    const std::vector<std::string>& cross_origin_strip_headers, std::string& method,
                    std::vector<std::pair<std::string, std::string>>& headers, std::string& body,
                    bool& has_body) {
  // 303, and 301/302 after a POST, turn into a GET without a body (as browsers do).
  if (code == 303 || ((code == 301 || code == 302) && method == "POST")) {
    if (method != "HEAD") method = "GET";
    body.clear();
    has_body = false;
    std::erase_if(headers, [](const auto& h) {
      const std::string n = AsciiLower(h.first);
      return n == "content-type";
    });
  }
  // Credentials stay with the origin they were meant for.
  if (to.Origin() != from.Origin()) {
    std::erase_if(headers, [&](const auto& h) {
      const std::string n = AsciiLower(h.first);
      if (n == "authorization" || n == "cookie") return true;
      return std::any_of(cross_origin_strip_headers.begin(), cross_origin_strip_headers.end(),
                         [&](const std::string& strip) { return AsciiLower(strip) == n; });
    });
  }
}

// The checked addresses of `url`'s host, resolved once (the exchange connects to no other):
// a non-public address only when it is itself a listed target's (`listed_addresses`).
StatusOr<std::vector<tcp::endpoint>> CheckedEndpoints(const EgressClientOptions& options,
                                                      const EgressUrl& url,
                                                      const std::set<std::string>& listed_addresses,
                                                      const std::string& where,
                                                      Clock::time_point deadline) {
  const std::string host = Unbracketed(url.host);
  std::vector<std::string> addresses;
  if (CanonicalAddress(host)) {
    addresses.push_back(host);
  } else {
    StatusOr<std::vector<std::string>> resolved =
        options.resolver_for_tests ? options.resolver_for_tests(host) : SystemResolve(host);
    if (!resolved.ok())
      return Status(resolved.status().code(), where + ": " + resolved.status().message());
    addresses = std::move(*resolved);
  }
  if (Clock::now() >= deadline) {
    return DeadlineExceeded(where + ": timed out resolving " + host);
  }
  std::vector<tcp::endpoint> endpoints;
  std::string refused;
  for (const std::string& a : addresses) {
    const std::optional<std::string> canonical = CanonicalAddress(a);
    if (!canonical) continue;
    if (auto kind = NonPublicAddressKind(*canonical)) {
      if (listed_addresses.count(*canonical) == 0) {
        refused += (refused.empty() ? "" : ", ") + *canonical + " (" + *kind + ")";
        continue;
      }
    }
    endpoints.emplace_back(
        net::ip::make_address(*canonical),
        static_cast<unsigned short>(url.port == 0 ? DefaultPort(url.scheme) : url.port));
  }
  if (endpoints.empty()) {
    return PermissionDenied(
        where + ": " + host + " resolves only to addresses that are refused: " +
        (refused.empty() ? std::string("none usable") : refused) +
        "; a loopback, private or link-local address is reached only when that address is "
        "itself a listed target host");
  }
  return endpoints;
}

// One request and its response on a private io_context, which the run's end stops.
Status ExchangeOnce(const HopRequest& in, HopResponse& out, const CancellationToken& cancel,
                    const std::string& where) {
  net::io_context io;
  bool done = false;
  net::co_spawn(io, RunHop(in, out), [&done](std::exception_ptr e) {
    done = true;
    if (e) std::rethrow_exception(e);
  });
  // The run's end stops the exchange; the stream is closed when its frame is destroyed.
  CancellationRegistration stop = cancel.OnCancel([&io] { io.stop(); });
  try {
    io.run();
  } catch (const std::exception& e) {
    return Internal(where + ": " + e.what());
  }
  if (!done) return Unavailable(where + ": the run ended");
  return Status::Ok();
}

}  // namespace

// The client itself, behind the module's table (egress/egress_module_api.hpp).
class TlsEgressClient {
 public:
  explicit TlsEgressClient(EgressClientOptions options);
  StatusOr<EgressResponse> Fetch(const EgressRequest& request,
                                 const CancellationToken& cancel) const;

 private:
  struct Tls;  // the TLS client context (system store, the test CA), built once
  EgressClientOptions options_;
  std::unique_ptr<Tls> tls_;
};

struct TlsEgressClient::Tls {
  ssl::context context{ssl::context::tls_client};
  Status status;  // not OK: https requests fail with it
};

TlsEgressClient::TlsEgressClient(EgressClientOptions options)
    : options_(std::move(options)), tls_(std::make_unique<Tls>()) {
  beast::error_code ec;
  tls_->context.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                            ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                            ssl::context::no_tlsv1_1);
  tls_->context.set_default_verify_paths(ec);
  if (ec) tls_->status = Unavailable("cannot load the system's CA store: " + ErrorText(ec));
  if (!options_.extra_ca_pem_for_tests.empty()) {
    tls_->context.add_certificate_authority(net::buffer(options_.extra_ca_pem_for_tests), ec);
    if (ec) tls_->status = InvalidArgument("the test CA is not valid PEM: " + ErrorText(ec));
  }
}

StatusOr<EgressResponse> TlsEgressClient::Fetch(const EgressRequest& request,
                                                const CancellationToken& cancel) const {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  std::string method = request.method;
  for (char& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::set<std::string> kMethods = {"GET",  "POST",    "PUT",  "DELETE",
                                                 "HEAD", "OPTIONS", "PATCH"};
  if (kMethods.count(method) == 0) {
    return InvalidArgument("the method \"" + request.method.substr(0, 40) +
                           "\" is not allowed (GET, POST, PUT, DELETE, HEAD, OPTIONS, PATCH)");
  }
  CODEACT_RETURN_IF_ERROR(CheckHeaders(request.headers));
  CODEACT_ASSIGN_OR_RETURN(EgressUrl url, ParseEgressUrl(request.url));
  std::vector<std::pair<std::string, std::string>> headers = request.headers;
  std::string body = request.body;
  bool has_body = request.has_body;

  std::set<std::string> listed_addresses;
  for (const auto& t : options_.targets) {
    if (auto a = CanonicalAddress(t.host)) listed_addresses.insert(*a);
  }

  for (int hop = 0;; ++hop) {
    const std::string where = method + " " + url.Origin() + url.target.substr(0, 200);
    if (Status s = CheckTarget(options_.targets, url, method); !s.ok()) {
      return Status(s.code(), (hop == 0 ? "" : "redirect refused: ") + s.message());
    }
    if (cancel.cancelled()) return Unavailable(where + ": the run ended");

    // Resolve once; connect only to addresses checked here (no second lookup).
    HopRequest in;
    CODEACT_ASSIGN_OR_RETURN(in.endpoints,
                             CheckedEndpoints(options_, url, listed_addresses, where, deadline));
    if (url.scheme == "https" && !tls_->status.ok()) return tls_->status;

    in.url = &url;
    in.method = method;
    in.headers = &headers;
    in.body = &body;
    in.has_body = has_body;
    std::int64_t cap = options_.max_response_bytes;
    if (request.max_response_bytes > 0) cap = std::min(cap, request.max_response_bytes);
    in.max_body = static_cast<std::uint64_t>(std::max<std::int64_t>(0, cap));
    in.deadline = deadline;
    in.tls = url.scheme == "https" ? &tls_->context : nullptr;
    HopResponse out;
    CODEACT_RETURN_IF_ERROR(ExchangeOnce(in, out, cancel, where));
    if (!out.status.ok()) return Status(out.status.code(), where + ": " + out.status.message());

    auto location = out.headers.find("location");
    if (!IsRedirect(out.code) || location == out.headers.end()) {
      EgressResponse response;
      response.status = out.code;
      response.body = std::move(out.body);
      response.headers = std::move(out.headers);
      response.final_url = url.Origin() + url.target;
      return response;
    }
    if (hop >= options_.max_redirects) {
      return ResourceExhausted(where + ": more than " + std::to_string(options_.max_redirects) +
                               " redirects");
    }
    StatusOr<EgressUrl> next = ParseEgressUrl(ResolveLocation(url, location->second));
    if (!next.ok()) return InvalidArgument(where + ": bad redirect: " + next.status().message());
    FollowRedirect(out.code, url, *next, options_.cross_origin_strip_headers, method, headers, body,
                   has_body);
    url = std::move(*next);
  }
}

}  // namespace codeact::internal

extern "C" __attribute__((visibility("default"))) const codeact::internal::EgressModuleApi*
codeact_egress_module_api() {
  using codeact::internal::TlsEgressClient;
  static const codeact::internal::EgressModuleApi api{
      codeact::internal::kEgressModuleAbi,
      [](const codeact::internal::EgressClientOptions& options) -> void* {
        return new TlsEgressClient(options);
      },
      [](void* client) { delete static_cast<TlsEgressClient*>(client); },
      [](const void* client, const codeact::internal::EgressRequest& request,
         const codeact::CancellationToken& cancel) {
        return static_cast<const TlsEgressClient*>(client)->Fetch(request, cancel);
      }};
  return &api;
}
