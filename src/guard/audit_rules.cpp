#include "guard/audit_rules.hpp"

#include <sys/stat.h>

#include <vector>

namespace codeact::internal {
namespace {

// Each rule once, with the audit events it answers (matched whole).
struct RuleEvents {
  AuditRule rule;
  std::vector<std::string_view> events;
};

constexpr const char* kFrames = "frame and code introspection";

const std::vector<RuleEvents>& Rules() {
  static const std::vector<RuleEvents> rules = {
      {{AuditAction::kDeny, "process creation"},
       {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
        "os.forkpty", "os.startfile"}},
      {{AuditAction::kDeny, "tracing"}, {"sys.settrace", "sys.setprofile"}},
      {{AuditAction::kDeny, "audit hooks"}, {"sys.addaudithook"}},
      {{AuditAction::kDeny, "pickle"}, {"pickle.find_class"}},
      {{AuditAction::kDenyFromUserCode, kFrames},
       {"sys._getframe", "sys._current_frames", "sys._current_exceptions", "code.__new__",
        "function.__new__"}},
      {{AuditAction::kDenyFromUserCode, "marshal"}, {"marshal.loads", "marshal.load"}},
      {{AuditAction::kDenyFromUserCode, "object graph"},
       {"gc.get_objects", "gc.get_referrers", "gc.get_referents"}},
      {{AuditAction::kCheckPath, "/proc"}, {"open", "os.listdir", "os.scandir"}},
      {{AuditAction::kCheckSocket, "network"}, {"socket.__new__"}},
      {{AuditAction::kCheckMode, "file modes"}, {"os.chmod", "os.mkdir"}},
      {{AuditAction::kCheckThreads, "max_processes"},
       {"_thread.start_new_thread", "_thread.start_joinable_thread"}},
      {{AuditAction::kCheckAttribute, kFrames},
       {"object.__getattr__", "object.__setattr__", "object.__delattr__"}},
  };
  return rules;
}

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
  for (const RuleEvents& r : Rules()) {
    for (std::string_view e : r.events) {
      if (e == event) return r.rule;
    }
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
