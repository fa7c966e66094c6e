// Reply, Routed and RequestInfo: what the HTTP service's routes hand back to a connection — a
// reply to write now, or work for the pool (with the caller's run slot) — and the helpers every
// route builds its replies with. Error bodies are {"error": message, "code": short reason}; the
// reason is also the metrics label and the access line's outcome.
//
// Internal (codeact::internal); Boost.Beast stays inside src/http_server.
#pragma once

#include <boost/beast/http/status.hpp>
#include <boost/json/object.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codeact/cancellation.hpp"

namespace codeact::internal {

inline constexpr const char* kJsonMediaType = "application/json";

struct Reply {
  boost::beast::http::status status = boost::beast::http::status::ok;
  std::string body;
  std::string content_type = kJsonMediaType;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string outcome;  // for the access log: a run's outcome, or why it was refused
};

// What the router decided: a reply now, or work for the pool (with the caller's run slot).
struct Routed {
  Routed() = default;
  Routed(Reply reply) : now(std::move(reply)) {}  // NOLINT: implicit by design
  std::optional<Reply> now;
  std::function<Reply(const CancellationToken&)> work;
  std::shared_ptr<void> slot;
};

// What the access line says about a request besides its method, status and sizes.
struct RequestInfo {
  std::string request_id;
  std::string token_id = "-";
  std::string route = "-";
};

Reply JsonReply(boost::beast::http::status status, const boost::json::object& body,
                std::string outcome = "");

// {"error": message, "code": short reason}; `reason` is also the metrics label and log outcome.
Reply ErrorReply(boost::beast::http::status status, std::string_view reason,
                 const std::string& message);

// 405 with the Allow header.
Reply MethodNotAllowed(const std::string& allow);

// `bytes` random bytes from the kernel as hex; aborts when the kernel's generator fails.
std::string RandomHex(std::size_t bytes);

// The media type of a Content-Type value, lower-cased, parameters dropped.
std::string MediaType(std::string_view value);

// The value of `key` in a query string ("a=1&detail&format=mcp"): "" for a key without one, the
// last when it is given twice, nullopt when it is absent. Values are taken as written.
std::optional<std::string> QueryValue(std::string_view query, std::string_view key);

}  // namespace codeact::internal
