#include "bench/mcp_stdio_client.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "os/pipe_io.hpp"
#include "process/child.hpp"

extern "C" char** environ;

namespace codeact::bench {

using internal::Child;
using internal::LaunchSpec;

struct McpStdioClient::Impl {
  std::unique_ptr<Child> server;
  std::string buffer;               // bytes read past the last full line
  bool log_open[2] = {true, true};  // the server's stdout and stderr, until their EOF
};

McpStdioClient::McpStdioClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

McpStdioClient::~McpStdioClient() {
  if (!impl_ || !impl_->server) return;
  impl_->server->CloseBridgeToChild();  // the server's stdin: end of input
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!impl_->server->TryWait()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      impl_->server->KillAll();
      break;
    }
    pollfd p{impl_->server->bridge_from_child_fd(), POLLIN, 0};
    (void)::poll(&p, 1, 20);  // wakes at its exit (EOF), else rechecks
    char sink[4096];
    while (::read(impl_->server->bridge_from_child_fd(), sink, sizeof sink) > 0) {
    }
  }
  impl_->server->Wait();
}

pid_t McpStdioClient::pid() const { return impl_->server->pid(); }

StatusOr<std::unique_ptr<McpStdioClient>> McpStdioClient::Start(
    const std::string& codeact_binary, const std::vector<std::string>& server_args) {
  // The child's bridge pipes (fds 3 and 4) become the server's stdin and stdout: Child gives a
  // program stdin on /dev/null and its stdout to a capped capture, not a conversation.
  LaunchSpec spec;
  spec.executable = "/bin/sh";
  std::string script = "exec \"$0\" mcp --quiet";
  for (std::size_t i = 0; i < server_args.size(); ++i)
    script += " \"$" + std::to_string(i + 1) + "\"";
  script += " <&3 >&4 3<&- 4>&-";
  spec.args = {"-c", script, codeact_binary};
  spec.args.insert(spec.args.end(), server_args.begin(), server_args.end());
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) spec.environment[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  auto server = Child::Start(spec);
  if (!server.ok()) return server.status();
  auto impl = std::make_unique<Impl>();
  impl->server = std::move(*server);
  std::unique_ptr<McpStdioClient> client(new McpStdioClient(std::move(impl)));
  auto init = client->Call(
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
      R"("capabilities":{},"clientInfo":{"name":"codeact-bench","version":"1"}}})",
      std::chrono::seconds(60));
  if (!init.ok()) return init.status();
  if (init->find("\"result\"") == std::string::npos)
    return Internal("codeact mcp refused initialize: " + *init);
  if (Status s = client->Send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"); !s.ok())
    return s;
  return client;
}

Status McpStdioClient::Send(const std::string& line) {
  return internal::WriteAll(impl_->server->bridge_to_child_fd(), line + "\n");
}

StatusOr<std::string> McpStdioClient::Receive(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const int fd = impl_->server->bridge_from_child_fd();
  for (;;) {
    if (const auto nl = impl_->buffer.find('\n'); nl != std::string::npos) {
      std::string line = impl_->buffer.substr(0, nl);
      impl_->buffer.erase(0, nl + 1);
      return line;
    }
    char chunk[64 * 1024];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      impl_->buffer.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return Unavailable("codeact mcp closed its stdout");
    if (errno != EAGAIN && errno != EINTR) return Unavailable("reading from codeact mcp failed");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return DeadlineExceeded("codeact mcp did not answer in time");
    // The server's own stdout and stderr (its log, if it writes one) are drained and dropped,
    // so that a full pipe never stalls it.
    Child& server = *impl_->server;
    pollfd p[3] = {{fd, POLLIN, 0},
                   {impl_->log_open[0] ? server.stdout_fd() : -1, POLLIN, 0},
                   {impl_->log_open[1] ? server.stderr_fd() : -1, POLLIN, 0}};
    (void)::poll(p, 3, static_cast<int>(left.count()));
    for (int i = 1; i < 3; ++i) {
      if (p[i].fd < 0 || p[i].revents == 0) continue;
      char sink[4096];
      const ssize_t got = ::read(p[i].fd, sink, sizeof sink);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
        impl_->log_open[i - 1] = false;
    }
  }
}

StatusOr<std::string> McpStdioClient::Call(const std::string& line,
                                           std::chrono::milliseconds timeout) {
  if (Status s = Send(line); !s.ok()) return s;
  return Receive(timeout);
}

std::string McpStdioClient::ExecuteCodeRequest(long id, const std::string& code_json_escaped) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":")" +
         code_json_escaped + R"("}}})";
}

}  // namespace codeact::bench
