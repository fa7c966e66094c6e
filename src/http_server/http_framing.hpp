// FramingError: what Beast's parser leaves to the application (RFC 9112). A request whose length
// the server and a proxy in front of it could read differently (request smuggling) is refused
// with 400 and the connection closed, before its body is read.
//
// Internal (codeact::internal).
#pragma once

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <optional>
#include <string>

namespace codeact::internal {

struct FramingRefusal {
  boost::beast::http::status status;
  std::string message;
};

// The refusal of a request header with faulty framing; nothing when its framing is sound.
std::optional<FramingRefusal> FramingError(const boost::beast::http::request_header<>& req);

}  // namespace codeact::internal
