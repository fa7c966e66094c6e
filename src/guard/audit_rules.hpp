// AuditRules: what the runtime guard's audit hook (guard_module.cpp) does with each CPython
// audit event, as data without the Python C API. The hook turns what the OS layers (seccomp,
// Landlock) refuse anyway, and what only Python can see, into a clear
// PermissionError("codeact guard: <rule>: ...") — it is the message, not the boundary: code
// that slips past it meets the OS layers. compile and exec are not hooked: the standard library
// compiles and executes code of its own (dataclasses, namedtuple, typing), and a hook cannot
// tell that apart from the user's reliably.
#pragma once

#include <string_view>

namespace codeact::internal {

enum class AuditAction {
  kAllow,             // not the guard's business
  kDeny,              // always: process creation, ctypes, sockets, tracing, audit hooks, pickle
  kDenyFromUserCode,  // when the user's code itself raised it: frames, code objects, marshal, gc
  kCheckPath,         // open / os.listdir / os.scandir: guarded /proc files, the bridge fds
  kCheckSocket,       // socket.__new__: AF_UNIX only (asyncio's self-pipe is a socketpair)
  kCheckMode,         // os.chmod / os.mkdir: no setuid, setgid or sticky bit; no o+w by chmod
  kCheckThreads,      // _thread.start_new_thread: no more threads than the run's max_threads
  kCheckAttribute,    // object.__getattr__/__setattr__/__delattr__: frame and code internals
};

struct AuditRule {
  AuditAction action = AuditAction::kAllow;
  const char* rule = "";  // the rule's name in the message, e.g. "process creation"
};

AuditRule ClassifyAuditEvent(std::string_view event);

// /proc/<pid|self|thread-self>[/task/<tid>]/{mem,environ,fd,map_files}[/...] and /proc/sys[/...]
// of an absolute path, after removing "." and resolving ".." by name.
bool IsGuardedProcPath(std::string_view path);

// Attributes that lead from an object to frames and code: read (tb_frame, f_code, gi_frame,
// __code__, ...) or written (__code__, __defaults__, __globals__, __bases__, ...).
bool IsGuardedAttribute(std::string_view name, bool write);

// The bits of `mode` that `event` ("os.chmod" or "os.mkdir") may not set: setuid, setgid and
// sticky for both, and write for others for a chmod (a new directory's o+w the umask removes).
unsigned WeakeningModeBits(std::string_view event, unsigned mode);

}  // namespace codeact::internal
