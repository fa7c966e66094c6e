// Connections and the listener of the HTTP service (http_connection.hpp).
#include "http_server/http_connection.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <optional>
#include <sstream>
#include <string>

#include "common/beast_names.hpp"
#include "http_server/http_framing.hpp"
#include "mcp_server/mcp_revisions.hpp"

namespace codeact::internal {
namespace {

constexpr std::size_t kMaxHeaderBytes = 16 * 1024;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, ServeContext& context, HttpRouter& router)
      : stream_(std::move(socket)), context_(context), router_(router) {
    ++context_.connections();
  }
  ~Connection() { --context_.connections(); }

  void Start() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Connection::Read, shared_from_this()));
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->body_limit(context_.options().max_body_bytes);
    parser_->header_limit(kMaxHeaderBytes);
    stream_.expires_after(context_.options().request_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Connection::OnHeader, shared_from_this()));
  }

  // The header alone first: its framing is checked before a body is read by it.
  void OnHeader(beast::error_code ec, std::size_t bytes) {
    if (ec) return OnRead(ec, bytes);
    if (auto refused = FramingError(parser_->get().base())) {
      started_ = Clock::now();
      info_ = RequestInfo{};
      info_.request_id = "req_" + RandomHex(8);
      bytes_in_ = bytes;
      method_ = std::string(parser_->get().method_string());
      context_.metrics().CountRejected("bad_framing");
      keep_alive_ = false;
      context_.BeginRequest();
      Reply r = ErrorReply(refused->status, "bad_framing", refused->message);
      return Send(std::move(r));
    }
    const auto& fields = parser_->get().base();
    header_fields_ = static_cast<std::size_t>(std::distance(fields.begin(), fields.end()));
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this(), bytes](beast::error_code body_ec, std::size_t more) {
          self->DropTrailers();
          self->OnRead(body_ec, bytes + more);
        });
  }

  // Beast adds a chunked body's trailer fields to the header; a server must not merge them
  // (RFC 9110 6.5.1): a trailer could otherwise add the Authorization, a second Host or the
  // Mcp-Session-Id that the header did not have. They are dropped.
  void DropTrailers() {
    auto& fields = parser_->get().base();
    std::size_t i = 0;
    for (auto it = fields.begin(); it != fields.end();) {
      it = i++ < header_fields_ ? std::next(it) : fields.erase(it);
    }
  }

  void OnRead(beast::error_code ec, std::size_t bytes) {
    started_ = Clock::now();
    info_ = RequestInfo{};
    info_.request_id = "req_" + RandomHex(8);
    bytes_in_ = bytes;
    if (ec) return OnReadError(ec);
    context_.BeginRequest();
    const auto& req = parser_->get();
    method_ = std::string(req.method_string());
    keep_alive_ = req.keep_alive() && !context_.draining();
    const auto id = req["X-Request-Id"];
    if (!id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        })) {
      info_.request_id = std::string(id);
    }
    const auto origin = req[http::field::origin];
    cors_origin_.clear();
    if (!origin.empty() && context_.AllowsOrigin(origin)) cors_origin_ = std::string(origin);
    Routed routed;
    try {
      routed = router_.Route(req, info_);
    } catch (const std::exception& e) {
      routed.now = ErrorReply(http::status::internal_server_error, "internal", e.what());
    }
    if (routed.now) return Send(std::move(*routed.now));
    StartWork(std::move(routed));
  }

  // A read that ended without a whole request: a refusal for what is over a limit or malformed,
  // a quiet close for a hang-up or an idle timeout.
  void OnReadError(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted) {
      return Close();
    }
    if (ec == http::error::body_limit) {
      context_.metrics().CountRejected("body_too_large");
      keep_alive_ = false;
      context_.BeginRequest();
      return Send(ErrorReply(http::status::payload_too_large, "body_too_large",
                             "the body is over the server's limit of " +
                                 std::to_string(context_.options().max_body_bytes) + " bytes"));
    }
    if (ec == http::error::header_limit) {
      context_.metrics().CountRejected("header_too_large");
      keep_alive_ = false;
      context_.BeginRequest();
      return Send(ErrorReply(http::status::request_header_fields_too_large, "header_too_large",
                             "the header is over " + std::to_string(kMaxHeaderBytes) + " bytes"));
    }
    if (ec.category() == http::make_error_code(http::error::bad_target).category()) {
      context_.metrics().CountRejected("bad_http");
      keep_alive_ = false;
      context_.BeginRequest();
      return Send(ErrorReply(http::status::bad_request, "bad_http",
                             "malformed HTTP request: " + ec.message()));
    }
    Close();
  }

  // Work for the pool: a cancellation source of its own, and the socket watched meanwhile.
  void StartWork(Routed routed) {
    source_ = context_.TrackRun();
    auto self = shared_from_this();
    auto work = std::move(routed.work);
    auto slot = std::move(routed.slot);
    const CancellationToken token = source_->token();
    const bool queued = context_.Submit([self, work, slot, token]() mutable {
      Reply reply;
      const EventSink events = [self](const std::string& message) {
        net::post(self->stream_.get_executor(), [self, message] { self->SendEvent(message); });
      };
      try {
        ScopedEventSink scope(&events);
        reply = work(token);
      } catch (const std::exception& e) {
        reply = ErrorReply(http::status::internal_server_error, "internal", e.what());
      }
      slot.reset();
      net::post(self->stream_.get_executor(),
                [self, reply = std::move(reply)]() mutable { self->OnWorkDone(std::move(reply)); });
    });
    if (!queued) {
      context_.UntrackRun(source_);
      source_.reset();
      context_.metrics().CountRejected("queue_full");
      Reply r = ErrorReply(http::status::too_many_requests, "queue_full",
                           "every worker is busy and the queue is full; retry later");
      r.headers.emplace_back("Retry-After", "1");
      return Send(std::move(r));
    }
    working_ = true;
    stream_.expires_never();
    WatchForHangUp();
  }

  // A client that closes its connection while its run works cancels the run. Bytes it sends
  // meanwhile (a pipelined request) are read into the request buffer, where the next read finds
  // them, and the watch goes on: a byte and then a hang-up is a hang-up. Past a whole request's
  // worth of such bytes (header and body limits) the server stops reading, and the hang-up is
  // noticed when the reply is written.
  void WatchForHangUp() {
    beast::get_lowest_layer(stream_).socket().async_wait(
        tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
          // Nothing reads buffer_ while the run works; once it has ended (working_ false) the
          // next request's read may, so the buffer is left alone.
          if (ec || !self->working_) return;
          const std::size_t cap = kMaxHeaderBytes + self->context_.options().max_body_bytes;
          if (self->buffer_.size() >= cap) return;
          const auto space =
              self->buffer_.prepare(std::min<std::size_t>(16 * 1024, cap - self->buffer_.size()));
          const int fd = beast::get_lowest_layer(self->stream_).socket().native_handle();
          const ssize_t n = ::recv(fd, space.data(), space.size(), MSG_DONTWAIT);
          if (n > 0) {
            self->buffer_.commit(static_cast<std::size_t>(n));
          } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            self->client_gone_ = true;
            if (self->source_) self->source_->Cancel("the client disconnected");
            return;
          }
          self->WatchForHangUp();
        });
  }

  void OnWorkDone(Reply reply) {
    working_ = false;
    beast::error_code ignored;
    // An SSE write in flight must not be cancelled with the hang-up watch: WriteSse cancels it.
    if (sse_writing_) {
      sse_cancel_watch_ = true;
    } else {
      beast::get_lowest_layer(stream_).socket().cancel(ignored);
    }
    context_.UntrackRun(source_);
    source_.reset();
    if (client_gone_) {
      // Nobody to answer: the access line says so (499, as the reverse proxies log it).
      context_.Access(info_, method_, 499, reply.outcome, Clock::now() - started_, bytes_in_, 0);
      context_.EndRequest();
      return Close();
    }
    if (context_.draining()) keep_alive_ = false;
    if (sse_started_) return FinishEvents(std::move(reply));
    Send(std::move(reply));
  }

  // ---- A response that became an SSE stream (notifications ahead of the reply) ----
  // The header (chunked, Connection: close) goes out with the first event; each event is one
  // chunk; the reply is the last event, then the connection closes. Events after the work ended,
  // or for a client that is gone, are dropped.
  void SendEvent(const std::string& message) {
    if (!working_ || client_gone_) return;
    if (!sse_started_) {
      sse_started_ = true;
      keep_alive_ = false;
      http::response<http::empty_body> head(http::status::ok, 11);
      head.set(http::field::server, "codeact");
      head.set(http::field::content_type, "text/event-stream");
      head.set(http::field::cache_control, "no-cache");
      head.set("X-Accel-Buffering", "no");
      head.set("X-Request-Id", info_.request_id);
      if (!cors_origin_.empty()) {
        for (const auto& [name, value] : CorsHeaders(cors_origin_, /*preflight=*/false))
          head.set(name, value);
      }
      head.keep_alive(false);
      head.chunked(true);
      std::ostringstream text;
      text << head.base();
      sse_out_.push_back(text.str());
    }
    // A whole event (REST's output events) goes as it is; anything else is an MCP message.
    QueueChunk(message.rfind("event: ", 0) == 0 ? message
                                                : "event: message\ndata: " + message + "\n\n");
  }

  void QueueChunk(const std::string& data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    sse_out_.push_back(size + data + "\r\n");
    if (!sse_writing_) WriteSse();
  }

  void WriteSse() {
    if (sse_cancel_watch_) {
      sse_cancel_watch_ = false;
      beast::error_code ignored;
      beast::get_lowest_layer(stream_).socket().cancel(ignored);
    }
    if (sse_out_.empty()) {
      sse_writing_ = false;
      if (sse_final_) {
        context_.Access(info_, method_, 200, outcome_, Clock::now() - started_, bytes_in_,
                        sse_bytes_);
        context_.EndRequest();
        Linger();
      }
      return;
    }
    sse_writing_ = true;
    auto chunk = std::make_shared<std::string>(std::move(sse_out_.front()));
    sse_out_.pop_front();
    net::async_write(stream_, net::buffer(*chunk),
                     [self = shared_from_this(), chunk](beast::error_code ec, std::size_t n) {
                       self->sse_bytes_ += n;
                       if (ec) return self->OnSseWriteError();
                       self->WriteSse();
                     });
  }

  // The client went away mid-stream: that cancels the run (if any).
  void OnSseWriteError() {
    sse_out_.clear();
    client_gone_ = true;
    if (source_) source_->Cancel("the client disconnected");
    sse_writing_ = false;
    if (sse_final_) {
      context_.Access(info_, method_, 499, outcome_, Clock::now() - started_, bytes_in_,
                      sse_bytes_);
      context_.EndRequest();
      Close();
    }
  }

  // The reply as the stream's last event ("event: message" framing unless it has it already).
  void FinishEvents(Reply reply) {
    outcome_ = std::move(reply.outcome);
    std::string event = reply.content_type == "text/event-stream"
                            ? std::move(reply.body)
                            : "event: message\ndata: " + reply.body + "\n\n";
    sse_final_ = true;
    QueueChunk(event);
    sse_out_.push_back("0\r\n\r\n");
    if (!sse_writing_) WriteSse();
  }

  // On /mcp a refusal is a JSON-RPC error object (no id), whichever layer refused: codeact's
  // {"error", "code"} becomes {"jsonrpc","id":null,"error":{code, message, data.reason}}.
  static void McpTransportError(Reply& reply) {
    if (static_cast<int>(reply.status) < 400 || reply.content_type != kJsonMediaType) return;
    json::error_code ec;
    const json::value body = json::parse(reply.body, ec);
    if (ec || !body.is_object() || body.as_object().contains("jsonrpc")) return;
    const json::value* message = body.as_object().if_contains("error");
    const json::value* code = body.as_object().if_contains("code");
    if (message == nullptr || !message->is_string() || code == nullptr || !code->is_string())
      return;
    reply.body = McpTransportErrorBody(static_cast<int>(reply.status), code->as_string(),
                                       message->as_string());
  }

  void Send(Reply reply) {
    if (info_.route == "/mcp") McpTransportError(reply);
    if (!cors_origin_.empty()) {
      for (auto& h : CorsHeaders(cors_origin_, /*preflight=*/false)) {
        reply.headers.push_back(std::move(h));
      }
    }
    auto res = std::make_shared<http::response<http::string_body>>(reply.status, 11);
    res->set(http::field::server, "codeact");
    res->set(http::field::content_type, reply.content_type);
    res->set("X-Request-Id", info_.request_id);
    for (const auto& [name, value] : reply.headers) res->set(name, value);
    res->body() = std::move(reply.body);
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    response_ = res;
    outcome_ = std::move(reply.outcome);
    stream_.expires_after(context_.options().request_timeout);
    http::async_write(stream_, *res,
                      beast::bind_front_handler(&Connection::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, std::size_t bytes) {
    context_.Access(info_, method_, static_cast<int>(response_->result_int()), outcome_,
                    Clock::now() - started_, bytes_in_, bytes);
    context_.EndRequest();
    response_.reset();
    if (ec || !keep_alive_) return Linger();
    Read();
  }

  // Closing with unread bytes would reset the connection and could destroy the reply (a 413
  // before the client sent its whole body): send FIN, then read and discard for a moment.
  void Linger() {
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(2));
    discard_ = std::make_shared<std::array<char, 8192>>();
    DiscardMore();
  }
  void DiscardMore() {
    stream_.async_read_some(net::buffer(*discard_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->discarded_ += n;
                              if (ec || self->discarded_ > (8u << 20)) return self->Close();
                              self->DiscardMore();
                            });
  }

  void Close() {
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).socket().close(ignored);
  }

  beast::tcp_stream stream_;
  ServeContext& context_;
  HttpRouter& router_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::size_t header_fields_ = 0;  // the fields of the request's header (the rest are trailers)
  std::shared_ptr<http::response<http::string_body>> response_;
  std::shared_ptr<CancellationSource> source_;
  std::shared_ptr<std::array<char, 8192>> discard_;
  std::size_t discarded_ = 0;
  RequestInfo info_;
  std::deque<std::string> sse_out_;  // bytes of an SSE response, written in order
  bool sse_started_ = false;
  bool sse_writing_ = false;
  bool sse_cancel_watch_ = false;  // cancel the hang-up watch once the write in flight is done
  bool sse_final_ = false;         // the last event is queued: close once written
  std::size_t sse_bytes_ = 0;
  std::string cors_origin_;  // the request's Origin when the policy allows it: CORS headers
  std::string method_;
  std::string outcome_;
  Clock::time_point started_;
  std::size_t bytes_in_ = 0;
  bool keep_alive_ = true;
  bool working_ = false;
  bool client_gone_ = false;
};

}  // namespace

void Listener::Accept() {
  acceptor_.async_accept(net::make_strand(ioc_),
                         beast::bind_front_handler(&Listener::OnAccept, shared_from_this()));
}

void Listener::Stop() {
  net::post(acceptor_.get_executor(), [self = shared_from_this()] {
    beast::error_code ignored;
    self->acceptor_.close(ignored);
  });
}

void Listener::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
  if (!ec) {
    if (context_.connections().load() >= context_.options().max_connections) {
      context_.metrics().CountRejected("too_many_connections");
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      std::make_shared<Connection>(std::move(socket), context_, router_)->Start();
    }
  }
  Accept();
}

}  // namespace codeact::internal
