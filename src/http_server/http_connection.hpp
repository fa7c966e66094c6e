// The HTTP service's connections: a Listener accepts them (at most `max_connections` open; more
// are closed at once), and each connection reads one request at a time on its strand — the
// header first (its framing checked, http_framing.hpp), then the body within `request_timeout`
// and `max_body_bytes` (413) — hands it to the HttpRouter, answers a cheap route at once and
// sends a run to the worker pool (full: 429). While a run works the connection watches its
// socket: a client that hangs up cancels the run. A run that sends messages ahead of its reply
// (ScopedEventSink: MCP progress) turns the response into an SSE stream whose last event is the
// reply; a client that closes that stream cancels the run too. On /mcp every refusal is a
// JSON-RPC error object, and an allowed Origin gets CORS headers. Every response writes one
// access line.
//
// Internal (codeact::internal).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <memory>

#include "http_server/http_reply.hpp"
#include "http_server/serve_context.hpp"

namespace codeact::internal {

// Where a connection sends each whole request it read. Called on the connection's strand.
class HttpRouter {
 public:
  virtual ~HttpRouter() = default;
  virtual Routed Route(const HttpRequest& req, RequestInfo& info) = 0;
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(boost::asio::io_context& ioc, boost::asio::ip::tcp::acceptor acceptor,
           ServeContext& context, HttpRouter& router)
      : ioc_(ioc), acceptor_(std::move(acceptor)), context_(context), router_(router) {}

  void Accept();
  // Closes the acceptor (on its strand): no new connections.
  void Stop();

 private:
  void OnAccept(boost::beast::error_code ec, boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  ServeContext& context_;
  HttpRouter& router_;
};

}  // namespace codeact::internal
