#include "sandbox/setup_report.hpp"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>

#include "bridge/protocol.hpp"
#include "process/child.hpp"
#include "sandbox/sandbox_config.hpp"

namespace codeact::internal {
namespace {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch >= 0x80) {  // paths may hold anything: keep the frame ASCII
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

}  // namespace

void FailStep(const std::string& step, int err, const std::string& detail) {
  std::string message = "sandbox setup: " + step + " failed";
  if (err != 0) message += std::string(": ") + strerror(err);
  if (!detail.empty()) message += " (" + detail + ")";
  namespace field = protocol::field;
  auto member = [](std::string_view key, const std::string& json) {
    return JsonString(key) + ":" + json;
  };
  const std::string frame =
      "{" + member(field::kType, JsonString(protocol::Name(protocol::MessageType::kSetupError))) +
      "," + member(field::kStep, JsonString(step)) + "," +
      member(field::kErrno, std::to_string(err)) + "," +
      member(field::kMessage, JsonString(message)) + "}\n";
  if (::write(kChildBridgeWriteFd, frame.data(), frame.size()) !=
      static_cast<ssize_t>(frame.size())) {
    const std::string line = "codeact-sandbox: " + message + "\n";
    [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  }
  ::_exit(kSandboxSetupFailedExit);
}

}  // namespace codeact::internal
