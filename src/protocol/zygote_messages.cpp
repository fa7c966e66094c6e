#include "protocol/zygote_messages.hpp"

#include <variant>
#include <vector>

#include "protocol/flat_json.hpp"
#include "protocol/protocol.hpp"

namespace codeact::internal::protocol {
namespace {

std::nullopt_t Malformed(std::string& error, std::string_view what) {
  error = "malformed fork server message: " + std::string(what);
  return std::nullopt;
}

const FlatJsonField* Find(const std::vector<FlatJsonField>& fields, std::string_view name) {
  for (const FlatJsonField& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const std::int64_t* IntOf(const FlatJsonField* f) {
  return f == nullptr ? nullptr : std::get_if<std::int64_t>(&f->value);
}
const std::string* StringOf(const FlatJsonField* f) {
  return f == nullptr ? nullptr : std::get_if<std::string>(&f->value);
}

bool Ascii(std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

std::string Message(MessageType type, std::string_view fields) {
  return "{\"" + std::string(field::kType) + "\":\"" + std::string(Name(type)) + "\"" +
         std::string(fields) + "}";
}

std::string IntField(std::string_view name, std::int64_t value) {
  return ",\"" + std::string(name) + "\":" + std::to_string(value);
}

}  // namespace

std::optional<HostMessage> DecodeHostMessage(std::string_view datagram, std::string& error) {
  std::string why;
  const auto fields = ParseFlatJsonObject(datagram, why);
  if (!fields) return Malformed(error, why);
  const std::string* type = StringOf(Find(*fields, field::kType));
  if (type == nullptr) return Malformed(error, "\"type\" must be a string");
  const MessageSpec* spec = FindMessage(Channel::kForkServer, *type);
  if (spec == nullptr || spec->sender != Sender::kHost)
    return Malformed(error, "unknown type \"" + *type + "\"");
  for (std::string_view key : spec->required) {
    if (Find(*fields, key) == nullptr)
      return Malformed(error, *type + ": \"" + std::string(key) + "\" is missing");
  }
  auto integer = [&](std::string_view key, std::int64_t& out, bool optional) {
    const FlatJsonField* f = Find(*fields, key);
    if (f == nullptr && optional) return true;
    const std::int64_t* n = IntOf(f);
    if (n == nullptr) {
      Malformed(error, *type + ": \"" + std::string(key) + "\" must be an integer");
      return false;
    }
    out = *n;
    return true;
  };
  HostMessage m;
  if (spec->type == MessageType::kKill) {
    m.kill = true;
    if (!integer(field::kPid, m.pid, false)) return std::nullopt;
    if (m.pid <= 0) return Malformed(error, "kill: \"pid\" must be positive");
    return m;
  }
  const std::string* token = StringOf(Find(*fields, field::kToken));
  const std::string* workdir = StringOf(Find(*fields, field::kWorkdir));
  if (token == nullptr || !Ascii(*token) || workdir == nullptr)
    return Malformed(error, "fork needs an ASCII \"token\" and a \"workdir\" string");
  m.fork.token = *token;
  m.fork.workdir = *workdir;
  if (!integer(field::kUid, m.fork.uid, false) ||
      !integer(field::kWorkdirBytes, m.fork.workdir_bytes, false) ||
      !integer(field::kTmpBytes, m.fork.tmp_bytes, true) ||
      !integer(field::kCgroupFds, m.fork.cgroup_fds, true))
    return std::nullopt;
  if (m.fork.cgroup_fds < 0 || m.fork.cgroup_fds > kMaxForkCgroupFds)
    return Malformed(error, "fork: \"cgroup_fds\" out of range");
  return m;
}

std::string EncodeZygoteReady(std::int64_t pid) {
  return Message(MessageType::kZygoteReady, IntField(field::kPid, pid));
}

std::string EncodeForked(std::int64_t pid) {
  return Message(MessageType::kForked, IntField(field::kPid, pid));
}

std::string EncodeForkFailed(std::string_view message) {
  return Message(MessageType::kForkFailed,
                 ",\"" + std::string(field::kMessage) + "\":" + JsonStringLiteral(message));
}

std::string EncodeExited(std::int64_t pid, std::int64_t status, std::int64_t cpu_us) {
  return Message(MessageType::kExited, IntField(field::kPid, pid) +
                                           IntField(field::kStatus, status) +
                                           IntField(field::kCpuUs, cpu_us));
}

}  // namespace codeact::internal::protocol
