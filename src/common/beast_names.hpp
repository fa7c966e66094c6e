// The short names the sources that speak HTTP (http_server/, egress/) give Boost.Beast, Asio and
// JSON, and their clock: one list, so that every such file reads them alike. Include it in .cpp
// files only: it puts the names into codeact::internal.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/fwd.hpp>
#include <chrono>

namespace codeact::internal {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace json = boost::json;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

}  // namespace codeact::internal
