#include "protocol/protocol.hpp"

#include <boost/json.hpp>

#include "codeact/limits.hpp"
#include "json/serialize.hpp"
#include "protocol/bridge_fds.hpp"

namespace codeact::internal::protocol {
namespace {

boost::json::array Strings(std::span<const std::string_view> names) {
  boost::json::array out;
  for (std::string_view n : names) out.emplace_back(n);
  return out;
}

}  // namespace

std::string ProtocolTableJson() {
  boost::json::object messages;
  for (const MessageSpec& spec : MessageTable()) {
    messages[spec.name] = boost::json::object{
        {"channel", spec.channel == Channel::kBridge ? "bridge" : "fork_server"},
        {"sender", spec.sender == Sender::kHost ? "host" : "child"},
        {"required", Strings(spec.required)},
        {"optional", Strings(spec.optional)}};
  }
  const ExecutionLimits defaults;
  return SerializeJson(boost::json::object{
      {"messages", std::move(messages)},
      {"request_defaults", boost::json::object{{field::kMaxOutputBytes, defaults.max_output_bytes},
                                               {field::kMaxFrameBytes, defaults.max_frame_bytes},
                                               {field::kMaxToolCalls, defaults.max_tool_calls}}},
      {"bridge_fds", boost::json::array{kChildBridgeReadFd, kChildBridgeWriteFd}}});
}

}  // namespace codeact::internal::protocol
