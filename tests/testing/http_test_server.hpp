// HttpTestServer: a small HTTP or HTTPS server on 127.0.0.1 (a port of its own) for the egress
// tests, on Boost.Beast, and TestCertificates, a CA and a server certificate made with the
// openssl CLI in a temporary directory. Routes:
//   /hello           200 "hello"
//   /echo            200 "<METHOD> <body>" (and the request's X-Test, Content-Type and
//                    credential headers, when sent)
//   /redirect?to=U   302 to U;  /redirect303?to=U  303 to U
//   /big?n=N         200 with N bytes of 'x'
//   /slow            answers only when the server stops (a timeout's fixture)
// It counts the connections it accepted, so a test can assert that a refused request never
// reached it.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace codeact::testing {

// A CA and a certificate for `server_name` signed by it, as PEM files in a temporary directory.
struct TestCertificates {
  std::filesystem::path dir;
  std::string ca_pem;  // the CA certificate's text
  std::filesystem::path cert_file, key_file;
  bool ok = false;

  static TestCertificates Make(const std::string& server_name) {
    TestCertificates c;
    std::error_code ec;
    std::filesystem::path base = std::filesystem::temp_directory_path(ec);  // $TMPDIR
    if (ec) base = "/tmp";
    std::string tmpl = (base / "codeact-egress-certs-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return c;
    c.dir = tmpl;
    const std::string d = c.dir.string();
    std::ofstream(d + "/ext.cnf") << "subjectAltName=DNS:" << server_name << "\n"
                                  << "basicConstraints=CA:FALSE\n";
    const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::string cmd =
        "cd " + d + " && openssl req -x509" + key +
        " -keyout ca.key -out ca.pem -days 2 -subj /CN=codeact-egress-test-ca"
        " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign"
        " >log 2>&1 && openssl req" +
        key + " -keyout server.key -out server.csr -subj /CN=" + server_name +
        " >>log 2>&1 && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key"
        " -CAcreateserial -out server.pem -days 2 -extfile ext.cnf >>log 2>&1";
    if (std::system(cmd.c_str()) != 0) return c;
    std::ifstream in(d + "/ca.pem");
    std::stringstream text;
    text << in.rdbuf();
    c.ca_pem = text.str();
    c.cert_file = c.dir / "server.pem";
    c.key_file = c.dir / "server.key";
    c.ok = !c.ca_pem.empty();
    return c;
  }
  ~TestCertificates() {
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
  TestCertificates() = default;
  TestCertificates(TestCertificates&& o) noexcept { *this = std::move(o); }
  TestCertificates& operator=(TestCertificates&& o) noexcept {
    std::swap(dir, o.dir);
    ca_pem = std::move(o.ca_pem);
    cert_file = std::move(o.cert_file);
    key_file = std::move(o.key_file);
    ok = o.ok;
    return *this;
  }
};

class HttpTestServer {
 public:
  // Plain HTTP, or HTTPS with `certs`' server certificate.
  explicit HttpTestServer(const TestCertificates* certs = nullptr)
      : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    if (certs != nullptr) {
      tls_.emplace(boost::asio::ssl::context::tls_server);
      tls_->use_certificate_chain_file(certs->cert_file.string());
      tls_->use_private_key_file(certs->key_file.string(), boost::asio::ssl::context::pem);
    }
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~HttpTestServer() { Stop(); }

  int port() const { return port_; }
  int connections() const { return connections_.load(); }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_all();
    // A blocking accept is woken by one more connection, which it then drops.
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket waker(io_);
    waker.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)},
                  ec);
    if (accept_thread_.joinable()) accept_thread_.join();
    acceptor_.close(ec);
    std::vector<std::thread> workers;
    {
      std::lock_guard lock(mu_);
      workers.swap(workers_);
    }
    for (auto& t : workers) t.join();
  }

 private:
  void AcceptLoop() {
    for (;;) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket socket(io_);
      acceptor_.accept(socket, ec);
      if (ec) return;
      std::lock_guard lock(mu_);
      if (stopped_) return;
      ++connections_;
      workers_.emplace_back([this, s = std::move(socket)]() mutable { Serve(std::move(s)); });
    }
  }

  void Serve(boost::asio::ip::tcp::socket socket) {
    namespace http = boost::beast::http;
    boost::system::error_code ec;
    if (!tls_) {
      Exchange(socket);
      socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
      return;
    }
    boost::asio::ssl::stream<boost::asio::ip::tcp::socket&> stream(socket, *tls_);
    stream.handshake(boost::asio::ssl::stream_base::server, ec);
    if (ec) return;  // the client refused our certificate: the test asserts on its side
    Exchange(stream);
    stream.shutdown(ec);
  }

  static std::string Query(const std::string& target, const std::string& key) {
    const std::size_t q = target.find('?');
    if (q == std::string::npos) return "";
    std::string query = target.substr(q + 1);
    const std::string prefix = key + "=";
    std::size_t at = query.find(prefix);
    if (at == std::string::npos) return "";
    std::string value = query.substr(at + prefix.size());
    return value.substr(0, value.find('&'));
  }

  template <class Stream>
  void Exchange(Stream& stream) {
    namespace http = boost::beast::http;
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> req;
    boost::system::error_code ec;
    http::read(stream, buffer, req, ec);
    if (ec) return;
    const std::string target(req.target());
    const std::string path = target.substr(0, target.find('?'));
    http::response<http::string_body> res{http::status::ok, 11};
    res.set(http::field::connection, "close");
    if (path == "/hello") {
      res.body() = "hello";
    } else if (path == "/echo") {
      res.body() = std::string(req.method_string()) + " " + req.body();
      if (auto it = req.find("X-Test"); it != req.end()) {
        res.body() += " x-test=" + std::string(it->value());
      }
      if (auto it = req.find(http::field::content_type); it != req.end()) {
        res.body() += " type=" + std::string(it->value());
      }
      // Credentials that reached this hop (the redirect tests check which ones followed).
      for (const char* name : {"Authorization", "Cookie", "X-Api-Key", "X-Other-Key"}) {
        if (auto it = req.find(name); it != req.end()) {
          res.body() += " " + std::string(name) + "=" + std::string(it->value());
        }
      }
    } else if (path == "/redirect" || path == "/redirect303") {
      res.result(path == "/redirect" ? http::status::found : http::status::see_other);
      res.set(http::field::location, Query(target, "to"));
    } else if (path == "/big") {
      res.body() = std::string(std::stoul(Query(target, "n")), 'x');
    } else if (path == "/slow") {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopped_; });
      return;
    } else {
      res.result(http::status::not_found);
      res.body() = "no such route";
    }
    res.prepare_payload();
    http::write(stream, res, ec);
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::optional<boost::asio::ssl::context> tls_;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::thread accept_thread_;
  std::vector<std::thread> workers_;
};

}  // namespace codeact::testing
