#include "guard/audit_rules.hpp"

#include <sys/stat.h>

#include <vector>

namespace codeact::internal {
namespace {

struct Entry {
  std::string_view event;
  AuditRule rule;
};

constexpr const char* kProcess = "process creation";
constexpr const char* kFrames = "frame and code introspection";

constexpr Entry kEvents[] = {
    {"subprocess.Popen", {AuditAction::kDeny, kProcess}},
    {"os.system", {AuditAction::kDeny, kProcess}},
    {"os.exec", {AuditAction::kDeny, kProcess}},
    {"os.posix_spawn", {AuditAction::kDeny, kProcess}},
    {"os.spawn", {AuditAction::kDeny, kProcess}},
    {"os.fork", {AuditAction::kDeny, kProcess}},
    {"os.forkpty", {AuditAction::kDeny, kProcess}},
    {"os.startfile", {AuditAction::kDeny, kProcess}},
    {"sys.settrace", {AuditAction::kDeny, "tracing"}},
    {"sys.setprofile", {AuditAction::kDeny, "tracing"}},
    {"sys.addaudithook", {AuditAction::kDeny, "audit hooks"}},
    {"pickle.find_class", {AuditAction::kDeny, "pickle"}},
    {"sys._getframe", {AuditAction::kDenyFromUserCode, kFrames}},
    {"sys._current_frames", {AuditAction::kDenyFromUserCode, kFrames}},
    {"sys._current_exceptions", {AuditAction::kDenyFromUserCode, kFrames}},
    {"code.__new__", {AuditAction::kDenyFromUserCode, kFrames}},
    {"function.__new__", {AuditAction::kDenyFromUserCode, kFrames}},
    {"marshal.loads", {AuditAction::kDenyFromUserCode, "marshal"}},
    {"marshal.load", {AuditAction::kDenyFromUserCode, "marshal"}},
    {"gc.get_objects", {AuditAction::kDenyFromUserCode, "object graph"}},
    {"gc.get_referrers", {AuditAction::kDenyFromUserCode, "object graph"}},
    {"gc.get_referents", {AuditAction::kDenyFromUserCode, "object graph"}},
    {"open", {AuditAction::kCheckPath, "/proc"}},
    {"os.listdir", {AuditAction::kCheckPath, "/proc"}},
    {"os.scandir", {AuditAction::kCheckPath, "/proc"}},
    {"socket.__new__", {AuditAction::kCheckSocket, "network"}},
    {"os.chmod", {AuditAction::kCheckMode, "file modes"}},
    {"os.mkdir", {AuditAction::kCheckMode, "file modes"}},
    {"_thread.start_new_thread", {AuditAction::kCheckThreads, "max_processes"}},
    {"_thread.start_joinable_thread", {AuditAction::kCheckThreads, "max_processes"}},
    {"object.__getattr__", {AuditAction::kCheckAttribute, kFrames}},
    {"object.__setattr__", {AuditAction::kCheckAttribute, kFrames}},
    {"object.__delattr__", {AuditAction::kCheckAttribute, kFrames}},
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool Digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

AuditRule ClassifyAuditEvent(std::string_view event) {
  for (const auto& e : kEvents) {
    if (e.event == event) return e.rule;
  }
  // Every socket event but the creation of an AF_UNIX socket: addresses, names, hosts.
  if (StartsWith(event, "socket.")) return {AuditAction::kDeny, "network"};
  if (StartsWith(event, "ctypes.")) return {AuditAction::kDeny, "ctypes"};
  return {};
}

bool IsGuardedProcPath(std::string_view path) {
  // Every open passes here: most paths are done with at this first look.
  if (!StartsWith(path, "/") || path.find("proc") == std::string_view::npos) return false;
  std::vector<std::string_view> parts;
  for (std::size_t at = 0; at <= path.size();) {
    std::size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string_view part = path.substr(at, slash - at);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    at = slash + 1;
  }
  if (parts.size() < 2 || parts[0] != "proc") return false;
  if (parts[1] == "sys") return true;
  if (!Digits(parts[1]) && parts[1] != "self" && parts[1] != "thread-self") return false;
  std::size_t i = 2;
  if (i + 1 < parts.size() && parts[i] == "task" && Digits(parts[i + 1])) i += 2;
  if (i >= parts.size()) return false;
  const std::string_view leaf = parts[i];
  return leaf == "mem" || leaf == "environ" || leaf == "fd" || leaf == "map_files";
}

bool IsGuardedAttribute(std::string_view name, bool write) {
  static constexpr std::string_view kRead[] = {"tb_frame", "f_code",     "gi_frame", "gi_code",
                                               "cr_frame", "cr_code",    "ag_frame", "ag_code",
                                               "__code__", "__globals__"};
  static constexpr std::string_view kWrite[] = {"__code__",    "__defaults__", "__kwdefaults__",
                                                "__globals__", "__closure__",  "__bases__",
                                                "__class__",   "__builtins__"};
  auto in = [name](const auto& list) {
    for (std::string_view n : list) {
      if (n == name) return true;
    }
    return false;
  };
  return write ? in(kWrite) : in(kRead);
}

unsigned WeakeningModeBits(std::string_view event, unsigned mode) {
  const unsigned never = S_ISUID | S_ISGID | S_ISVTX;
  return mode & (event == "os.chmod" ? never | S_IWOTH : never);
}

}  // namespace codeact::internal
