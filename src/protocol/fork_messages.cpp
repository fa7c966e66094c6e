#include "protocol/fork_messages.hpp"

#include <boost/json.hpp>

#include "json/serialize.hpp"
#include "protocol/protocol.hpp"

namespace codeact::internal::protocol {
namespace json = boost::json;
namespace {

Status Malformed(std::string_view what) {
  return InvalidArgument("malformed fork server message: " + std::string(what));
}

// The integer field `key` of a message whose required fields are all there.
StatusOr<std::int64_t> Int(const json::object& o, std::string_view type, std::string_view key) {
  const json::value& v = o.at(key);
  if (!v.is_int64())
    return Malformed(std::string(type) + ": \"" + std::string(key) + "\" must be an integer");
  return v.as_int64();
}

StatusOr<std::int64_t> Pid(const json::object& o, std::string_view type) {
  StatusOr<std::int64_t> pid = Int(o, type, field::kPid);
  if (pid.ok() && *pid <= 0) return Malformed(std::string(type) + ": \"pid\" must be positive");
  return pid;
}

StatusOr<ZygoteMessage> DecodeKnown(MessageType type, const json::object& o) {
  const std::string_view name = Name(type);
  switch (type) {
    case MessageType::kZygoteReady:
    case MessageType::kForked: {
      StatusOr<std::int64_t> pid = Pid(o, name);
      if (!pid.ok()) return pid.status();
      if (type == MessageType::kForked) return ZygoteMessage(Forked{*pid});
      return ZygoteMessage(ZygoteReady{*pid});
    }
    case MessageType::kForkFailed: {
      const json::value& m = o.at(field::kMessage);
      if (!m.is_string()) return Malformed("fork_failed: \"message\" must be a string");
      return ZygoteMessage(ForkFailed{std::string(m.as_string())});
    }
    case MessageType::kExited: {
      StatusOr<std::int64_t> pid = Pid(o, name);
      StatusOr<std::int64_t> status = Int(o, name, field::kStatus);
      StatusOr<std::int64_t> cpu_us = Int(o, name, field::kCpuUs);
      for (const Status& s : {pid.status(), status.status(), cpu_us.status()}) {
        if (!s.ok()) return s;
      }
      return ZygoteMessage(Exited{*pid, *status, *cpu_us});
    }
    default:
      return Malformed("\"" + std::string(name) + "\" is the host's message, not the zygote's");
  }
}

}  // namespace

std::string EncodeFork(const ForkRequest& r) {
  json::object message{{field::kType, Name(MessageType::kFork)},
                       {field::kToken, r.token},
                       {field::kUid, r.uid},
                       {field::kWorkdirBytes, r.workdir_bytes},
                       {field::kWorkdir, r.workdir}};
  if (r.tmp_bytes > 0) message[field::kTmpBytes] = r.tmp_bytes;
  if (r.cgroup_fds > 0) message[field::kCgroupFds] = r.cgroup_fds;
  return SerializeJson(message);
}

std::string EncodeKill(std::int64_t pid) {
  return SerializeJson(json::object{{field::kType, Name(MessageType::kKill)}, {field::kPid, pid}});
}

StatusOr<ZygoteMessage> DecodeZygoteMessage(std::string_view datagram) {
  json::error_code ec;
  const json::value v = ParseJson(datagram, ec);
  if (ec) return Malformed("not JSON (" + JsonErrorText(ec) + ")");
  if (!v.is_object()) return Malformed("not a JSON object");
  const json::object& o = v.as_object();
  const json::value* type = o.if_contains(field::kType);
  if (type == nullptr || !type->is_string()) return Malformed("\"type\" must be a string");
  const MessageSpec* spec = FindMessage(Channel::kForkServer, type->as_string());
  if (spec == nullptr) return Malformed("unknown type \"" + std::string(type->as_string()) + "\"");
  for (std::string_view key : spec->required) {
    if (!o.contains(key))
      return Malformed(std::string(spec->name) + ": \"" + std::string(key) + "\" is missing");
  }
  return DecodeKnown(spec->type, o);
}

}  // namespace codeact::internal::protocol
