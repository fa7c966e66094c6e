#include "protocol/protocol.hpp"

#include <boost/json.hpp>

#include "json/serialize.hpp"
#include "limits/limit_table.hpp"
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
  // From the limit table's rows (limits/limit_table.hpp), where each such default is declared.
  boost::json::object request_defaults;
  for (const auto& [name, value] : RequestDefaults()) request_defaults[name] = value;
  return SerializeJson(boost::json::object{
      {"messages", std::move(messages)},
      {"request_defaults", std::move(request_defaults)},
      {"bridge_fds", boost::json::array{kChildBridgeReadFd, kChildBridgeWriteFd}},
      {"guard_as_armed", kGuardAsArmed}});
}

}  // namespace codeact::internal::protocol
