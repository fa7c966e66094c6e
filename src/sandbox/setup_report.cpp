#include "sandbox/setup_report.hpp"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "protocol/bridge_fds.hpp"
#include "protocol/flat_json.hpp"
#include "protocol/protocol.hpp"
#include "sandbox/sandbox_config.hpp"

namespace codeact::internal {
void FailStep(const std::string& step, int err, const std::string& detail) {
  std::string message = "sandbox setup: " + step + " failed";
  if (err != 0) message += std::string(": ") + strerror(err);
  if (!detail.empty()) message += " (" + detail + ")";
  namespace field = protocol::field;
  auto member = [](std::string_view key, const std::string& json) {
    return JsonStringLiteral(key) + ":" + json;
  };
  const std::string frame =
      "{" +
      member(field::kType, JsonStringLiteral(protocol::Name(protocol::MessageType::kSetupError))) +
      "," + member(field::kStep, JsonStringLiteral(step)) + "," +
      member(field::kErrno, std::to_string(err)) + "," +
      member(field::kMessage, JsonStringLiteral(message)) + "}\n";
  if (::write(kChildBridgeWriteFd, frame.data(), frame.size()) !=
      static_cast<ssize_t>(frame.size())) {
    const std::string line = "codeact-sandbox: " + message + "\n";
    [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  }
  ::_exit(kSandboxSetupFailedExit);
}

}  // namespace codeact::internal
