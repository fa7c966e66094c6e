// FramingError (http_framing.hpp): RFC 9112's framing rules the parser does not enforce.
#include "http_server/http_framing.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include "common/ascii.hpp"

namespace codeact::internal {

namespace http = boost::beast::http;

std::optional<FramingRefusal> FramingError(const http::request_header<>& req) {
  const auto bad = [](std::string message) {
    return FramingRefusal{http::status::bad_request, std::move(message)};
  };
  if (req.count(http::field::host) > 1) {
    return bad("a request has one Host header line (RFC 9112 3.2)");
  }
  const std::size_t lengths = req.count(http::field::content_length);
  if (lengths > 1 ||
      (lengths == 1 && req[http::field::content_length].find(',') != std::string_view::npos)) {
    return bad("a request has at most one Content-Length, holding one number (RFC 9112 6.3)");
  }
  if (req.count(http::field::transfer_encoding) == 0) return std::nullopt;
  if (req.version() < 11) {
    return bad("Transfer-Encoding in an HTTP/1.0 request is faulty framing (RFC 9112 6.1)");
  }
  if (lengths > 0) {
    return bad("a request has Transfer-Encoding or Content-Length, not both (RFC 9112 6.1)");
  }
  std::vector<std::string> codings;
  const auto [first, last] = req.equal_range(http::field::transfer_encoding);
  for (auto it = first; it != last; ++it) {
    const std::string_view value = it->value();
    std::size_t start = 0;
    while (start <= value.size()) {
      const std::size_t comma = std::min(value.find(',', start), value.size());
      std::string_view item = value.substr(start, comma - start);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      if (!item.empty()) codings.push_back(AsciiLower(item));
      start = comma + 1;
    }
  }
  if (codings.empty() || codings.back() != "chunked") {
    return bad("the last transfer coding of a request must be chunked (RFC 9112 6.3)");
  }
  if (std::count(codings.begin(), codings.end(), "chunked") > 1) {
    return bad("chunked is applied once (RFC 9112 7)");
  }
  if (codings.size() > 1) {
    return FramingRefusal{http::status::not_implemented,
                          "transfer codings other than chunked are not implemented"};
  }
  return std::nullopt;
}

}  // namespace codeact::internal
