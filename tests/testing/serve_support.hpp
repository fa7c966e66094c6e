// `codeact serve` as a black box for the integration tests: the server as a child process (its
// port read from the line it prints once it listens) and a small blocking HTTP/1.1 client on
// Boost.Beast, one connection per request.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "os/errno_status.hpp"
#include "os/path_within.hpp"
#include "os/pipe.hpp"
#include "os/pipe_io.hpp"
#include "os/proc_stat.hpp"
#include "os/proc_tasks.hpp"
#include "os/resource_limits.hpp"
#include "os/unique_fd.hpp"
#include "process/launch.hpp"
#include "test_support.hpp"
#include "testing/test_support.hpp"

namespace codeact::testing {

struct HttpResponse {
  int status = 0;  // 0: no response (the error says why)
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string error;

  boost::json::value Json() const {
    boost::json::error_code ec;
    boost::json::value v = boost::json::parse(body, ec);
    EXPECT_FALSE(ec) << "not JSON: " << body;
    return ec ? boost::json::value(nullptr) : v;
  }
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// One request on a new connection, which must be answered within `deadline`. A POST with a body
// gets Content-Type: application/json unless `headers` names one ("" in `headers` for Content-Type:
// none at all).
inline HttpResponse HttpCall(std::uint16_t port, const std::string& method,
                             const std::string& target, const std::string& body = "",
                             const Headers& headers = {},
                             std::chrono::seconds deadline = std::chrono::seconds(120)) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  namespace net = boost::asio;
  HttpResponse out;
  try {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    // The exchange runs on the io_context so that it has a deadline: a server that never
    // answers fails the test with what it printed instead of hanging it.
    auto await = [&](auto&& start) {
      beast::error_code ec;
      stream.expires_after(deadline);
      start([&](beast::error_code e, auto&&...) { ec = e; });
      ioc.restart();
      ioc.run();
      if (ec) throw beast::system_error(ec);
    };
    await([&](auto done) {
      stream.async_connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port), done);
    });
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
    bool content_type_given = false;
    for (const auto& [name, value] : headers) {
      if (beast::iequals(name, "content-type")) {
        content_type_given = true;
        if (value.empty()) continue;
      }
      req.set(name, value);
    }
    if (!content_type_given && method == "POST")
      req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    await([&](auto done) { http::async_write(stream, req, done); });
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    await([&](auto done) { http::async_read(stream, buffer, parser, done); });
    const auto& res = parser.get();
    out.status = static_cast<int>(res.result_int());
    out.body = res.body();
    for (const auto& field : res) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = std::string(field.value());
    }
    beast::error_code ignored;
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

// What a server sent back for raw bytes written on a new connection (the tests of framing the
// client library would never produce): everything read until the server closed the connection,
// or until `deadline` (then `closed` is false).
struct RawReply {
  std::string text;
  bool closed = false;
  std::string error;
  // The status codes of the responses in `text`, in order.
  std::vector<int> Statuses() const {
    std::vector<int> out;
    for (std::size_t at = text.find("HTTP/1.1 "); at != std::string::npos;
         at = text.find("HTTP/1.1 ", at + 1)) {
      out.push_back(std::atoi(text.c_str() + at + 9));
    }
    return out;
  }
};

inline RawReply RawExchange(std::uint16_t port, const std::string& bytes,
                            std::chrono::seconds deadline = std::chrono::seconds(30)) {
  namespace net = boost::asio;
  RawReply out;
  try {
    net::io_context ioc;
    net::ip::tcp::socket socket(ioc);
    socket.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    net::write(socket, net::buffer(bytes));
    const auto end = std::chrono::steady_clock::now() + deadline;
    char buf[4096];
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{socket.native_handle(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = ::recv(socket.native_handle(), buf, sizeof buf, 0);
      if (n <= 0) {
        out.closed = true;
        break;
      }
      out.text.append(buf, static_cast<std::size_t>(n));
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

inline Headers Bearer(const std::string& token, Headers more = {}) {
  more.emplace_back("Authorization", "Bearer " + token);
  return more;
}

// A `codeact serve --listen 127.0.0.1:0 ...` child with TMPDIR set; port() once it listens.
class ServeProcess {
 public:
  ServeProcess(std::vector<std::string> args, const std::string& tmpdir) {
    auto out = internal::MakePipe();
    auto err = internal::MakePipe();
    if (!out.ok() || !err.ok()) return;
    internal::LaunchPlan plan;
    plan.executable = CODEACT_BINARY;
    plan.args = {"serve", "--listen", "127.0.0.1:0"};
    plan.args.insert(plan.args.end(), args.begin(), args.end());
    plan.environment = EnvironmentWithTmpdir(tmpdir);
    auto devnull = internal::MakePipe();  // stdin: a pipe nobody writes to
    if (!devnull.ok()) return;
    stdin_ = std::move(devnull->write);
    plan.child_fds = {devnull->read.get(), out->write.get(), err->write.get()};
    auto pid = internal::LaunchProcess(plan);
    if (!pid.ok()) {
      ADD_FAILURE() << pid.status().ToString();
      return;
    }
    pid_ = *pid;
    out_ = std::move(out->read);
    err_ = std::move(err->read);
    stderr_thread_ = std::thread([this] {
      char buf[4096];
      for (;;) {
        // Until the end of the server's stderr; once the server is gone, until it goes quiet
        // (a process it started may hold the pipe open).
        pollfd p{err_.get(), POLLIN, 0};
        if (::poll(&p, 1, 200) == 0) {
          if (server_gone_) return;
          continue;
        }
        const ssize_t n = ::read(err_.get(), buf, sizeof buf);
        if (n <= 0) return;
        std::lock_guard lock(mu_);
        stderr_.append(buf, static_cast<std::size_t>(n));
      }
    });
    ReadPort();
  }
  ~ServeProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      if (Wait(std::chrono::seconds(30)) < 0)
        ADD_FAILURE() << "codeact serve outlived SIGKILL by 30 s";
    }
    server_gone_ = true;
    if (stderr_thread_.joinable()) stderr_thread_.join();
  }

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  void Signal(int sig) { ::kill(pid_, sig); }

  // The exit code (128 + signal when killed), or -1 if it did not end in time.
  int Wait(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  std::string Stderr() {
    std::lock_guard lock(mu_);
    return stderr_;
  }

 private:
  void ReadPort() {
    const std::string prefix = "codeact serve: listening on http://127.0.0.1:";
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_.get(), POLLIN, 0};
      if (::poll(&p, 1, 1000) <= 0) continue;
      char c;
      if (::read(out_.get(), &c, 1) != 1) break;
      if (c != '\n') {
        line.push_back(c);
        continue;
      }
      if (line.rfind(prefix, 0) == 0) {
        port_ = static_cast<std::uint16_t>(std::stoi(line.substr(prefix.size())));
        return;
      }
      line.clear();
    }
    ADD_FAILURE() << "codeact serve did not say where it listens; stderr: " << Stderr();
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  std::uint16_t port_ = 0;
  internal::UniqueFd stdin_, out_, err_;
  std::thread stderr_thread_;
  std::atomic<bool> server_gone_{false};
  std::mutex mu_;
  std::string stderr_;
};

// A test suite's `codeact serve` with a directory of its own, `<name>-<pid>` under the temp
// directory: `tmp/` is the server's TMPDIR, `tokens` its --token-file (one token a line).
// `args(dir)` gives the server's other flags, after making in `dir` what they name. Destroying
// it stops the server, then removes the directory.
class TokenServe {
 public:
  TokenServe(const std::string& name, const std::vector<std::string>& tokens,
             const std::function<std::vector<std::string>(const std::filesystem::path&)>& args)
      : dir_(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "tmp");
    {
      std::ofstream file(dir_ / "tokens");
      for (const auto& token : tokens) file << token << "\n";
    }
    std::vector<std::string> flags = {"--token-file", (dir_ / "tokens").string()};
    for (auto& flag : args(dir_)) flags.push_back(std::move(flag));
    server_.emplace(std::move(flags), (dir_ / "tmp").string());
  }
  ~TokenServe() {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  TokenServe(const TokenServe&) = delete;
  TokenServe& operator=(const TokenServe&) = delete;

  ServeProcess& server() { return *server_; }

 private:
  const std::filesystem::path dir_;
  std::optional<ServeProcess> server_;
};

}  // namespace codeact::testing
