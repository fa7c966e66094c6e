// _codeact_guard: the runtime guard, a CPython extension module (plain C API) that the runner
// (resources/runner.py) loads from the path in $CODEACT_GUARD (at the namespaces level, the copy
// in its own directory, /opt/codeact) and arms in each run child after its own preload and
// before any user code. Two steps, each allowed once per process, even when it failed:
//
//   arm(spec) -> int          no_new_privs; the metadata calls routed to the host's
//                             supervisor (metadata_notify.hpp: chmod, chown, utime, xattr);
//                             Landlock over spec's "exec", "read" and "write"
//                             paths (landlock.hpp; skipped where the kernel has none); the
//                             guard's seccomp program (sandbox/seccomp_programs.hpp) and the
//                             per-process signal filter (signal_filter.hpp), for all threads;
//                             a C audit hook (audit_rules.hpp) that also refuses to open spec's
//                             "bridge_fds". Returns the Landlock ABI that was applied (0: none).
//   limit_imports(patterns)   builtins.__import__ replaced by a wrapper that checks imports
//                             made directly by the user's code (the calling frame's file name is
//                             "<code>") against the patterns (import_patterns.hpp); the
//                             standard library's own imports pass. A refused name raises
//                             PermissionError, one no pattern names ModuleNotFoundError.
//
//   opened_for_writing()      whether the audit hook has seen an "open" that may write since
//                             arm(): the runner flushes the files the code left open (a walk of
//                             the objects it made) only then.
//   serve_forks(...) -> bytes the fork server's zygote (zygote_loop.hpp): returns only in each
//                             child it forks, set up for its run.
//
// A pooled child runs arm() while it waits for its request, limit_imports() with the request
// (the policy comes with it, or the request names the guard frame's). The latter therefore
// allocates nothing of its own: in a child forked from the zygote every first write to a page is
// a copy-on-write fault, which on the test VM cost up to milliseconds for a few dozen strings;
// the patterns stay the request's (or the frame's) Python list until the code's first import
// reads them.
//
// The OS layers are the boundary; the Python layer gives clear messages and covers what only
// Python can see. Neither can be undone: a seccomp filter and a Landlock domain last for the
// process and its threads, audit hooks cannot be removed, and the original __import__ is held
// here only. A failure raises RuntimeError("codeact guard: ..."); the runner then ends the run
// with a guard_error frame instead of running the code unguarded.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "guard/audit_rules.hpp"
#include "guard/import_patterns.hpp"
#include "guard/landlock.hpp"
#include "guard/metadata_notify.hpp"
#include "guard/signal_filter.hpp"
#include "guard/zygote_loop.hpp"
#include "os/errno_status.hpp"
#include "sandbox/seccomp_programs.hpp"

namespace codeact::internal {
namespace {

constexpr std::string_view kUserCodeFile = "<code>";

struct Guard {
  bool armed = false;
  bool imports_limited = false;
  long bridge_fds[8] = {};
  int bridge_fd_count = 0;
  PyObject* pattern_list =
      nullptr;  // strong: a tuple of the request's str (not the list it could change)
  bool patterns_parsed = false;
  ImportPatterns patterns;              // parsed from pattern_list on the code's first import
  PyObject* original_import = nullptr;  // strong, for the life of the process
  bool opened_for_writing = false;      // an "open" event that may write (opened_for_writing())
  long max_threads = 0;                 // spec's "max_threads": the thread cap (0: none)
};

Guard guard;

PyObject* Fail(const std::string& what) {
  PyErr_Format(PyExc_RuntimeError, "codeact guard: %s", what.c_str());
  return nullptr;
}

// Appends the items of `list` (a list or tuple of str; None: nothing) to `out`.
bool StringList(PyObject* list, const char* what, std::vector<std::string>& out) {
  if (list == nullptr || list == Py_None) return true;
  if (!PyList_Check(list) && !PyTuple_Check(list)) {
    PyErr_Format(PyExc_TypeError, "codeact guard: %s must be a list of str", what);
    return false;
  }
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(list); ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(list, i);
    Py_ssize_t size = 0;
    const char* text = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &size) : nullptr;
    if (text == nullptr) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "codeact guard: %s must be a list of str", what);
      return false;
    }
    out.emplace_back(text, static_cast<std::size_t>(size));
  }
  return true;
}

bool SpecList(PyObject* spec, const char* key, std::vector<std::string>& out) {
  return StringList(PyDict_GetItemString(spec, key), key, out);  // borrowed
}

// --- arm ----------------------------------------------------------------------------------------

int AuditHook(const char* event, PyObject* args, void*);

PyObject* Arm(PyObject*, PyObject* spec) {
  if (guard.armed) return Fail("arm: already armed");
  guard.armed = true;
  if (!PyDict_Check(spec)) {
    PyErr_SetString(PyExc_TypeError, "codeact guard: arm needs a dict");
    return nullptr;
  }
  LandlockPaths paths;
  if (!SpecList(spec, "exec", paths.exec) || !SpecList(spec, "read", paths.read) ||
      !SpecList(spec, "write", paths.write)) {
    return nullptr;
  }
  PyObject* fds = PyDict_GetItemString(spec, "bridge_fds");  // borrowed
  if (fds != nullptr && fds != Py_None) {
    if (!PyList_Check(fds) ||
        PyList_GET_SIZE(fds) > static_cast<Py_ssize_t>(std::size(guard.bridge_fds))) {
      PyErr_SetString(PyExc_TypeError, "codeact guard: bridge_fds must be a short list of int");
      return nullptr;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(fds); ++i) {
      const long fd = PyLong_AsLong(PyList_GET_ITEM(fds, i));
      if (fd == -1 && PyErr_Occurred()) return nullptr;
      guard.bridge_fds[guard.bridge_fd_count++] = fd;
    }
  }
  if (PyObject* cap = PyDict_GetItemString(spec, "max_threads"); cap != nullptr && cap != Py_None) {
    guard.max_threads = PyLong_AsLong(cap);  // borrowed
    if (guard.max_threads == -1 && PyErr_Occurred()) return nullptr;
  }
  // What the run creates is not writable for others (the seccomp filter keeps 022 in the umask).
  ::umask(::umask(022) | 022);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return Fail(std::string("prctl(PR_SET_NO_NEW_PRIVS) failed: ") + ErrnoText(errno));
  }
  if (std::string error = ArmMetadataNotify(paths.write); !error.empty()) return Fail(error);
  const int abi = LandlockAbi();
  if (abi >= 1) {
    if (std::string error = ApplyLandlock(paths, abi); !error.empty()) return Fail(error);
  }
  if (int err = LoadSeccompProgram(GuardSeccompProgram(), /*all_threads=*/true); err != 0) {
    return Fail(std::string("loading the seccomp filter failed: ") + ErrnoText(err));
  }
  const std::vector<sock_filter> self = SelfTargetFilter(::getpid(), ::getpgrp());
  if (int err = LoadSeccompProgram({self.data(), self.size()}, /*all_threads=*/true); err != 0) {
    return Fail(std::string("loading the self-target filter failed: ") + ErrnoText(err));
  }
  if (PySys_AddAuditHook(AuditHook, nullptr) != 0) return nullptr;
  return PyLong_FromLong(abi);
}

// --- the audit hook ---------------------------------------------------------------------------

bool IsUserCodeFile(PyObject* filename) {
  return PyUnicode_Check(filename) &&
         PyUnicode_CompareWithASCIIString(filename, kUserCodeFile.data()) == 0;
}

// A file name the code compiled itself gets by default ("<string>", "<unknown>"), unlike the
// standard library's frozen modules ("<frozen os>") and files.
bool IsCompiledStringFile(PyObject* filename) {
  if (!PyUnicode_Check(filename)) return false;
  const char* text = PyUnicode_AsUTF8(filename);
  if (text == nullptr) {
    PyErr_Clear();
    return false;
  }
  return text[0] == '<' && std::strncmp(text, "<frozen ", 8) != 0;
}

// Whether the innermost Python frame is the user's code: its file is "<code>", or it was
// compiled from a string and called straight from "<code>" (exec/eval in the user's code).
bool CalledFromUserCode() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  if (frame == nullptr) return false;
  PyCodeObject* code = PyFrame_GetCode(frame);
  const bool user = IsUserCodeFile(code->co_filename);
  const bool from_string = !user && IsCompiledStringFile(code->co_filename);
  Py_DECREF(code);
  if (user || !from_string) return user;
  PyFrameObject* back = PyFrame_GetBack(frame);
  if (back == nullptr) return false;
  PyCodeObject* back_code = PyFrame_GetCode(back);
  const bool back_user = IsUserCodeFile(back_code->co_filename);
  Py_DECREF(back_code);
  Py_DECREF(back);
  return back_user;
}

int Deny(const AuditRule& rule, const char* event) {
  PyErr_Format(PyExc_PermissionError, "codeact guard: %s: %s is not allowed", rule.rule, event);
  return -1;
}

// open(path, ...) / os.listdir(path) / os.scandir(path): the guarded /proc files and the
// bridge fds (given as integers: open(3), os.fdopen(4)).
int CheckPath(const AuditRule& rule, const char* event, PyObject* args) {
  if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 1) return 0;
  PyObject* path = PyTuple_GET_ITEM(args, 0);
  if (PyLong_Check(path)) {
    const long fd = PyLong_AsLong(path);
    if (fd == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return 0;
    }
    if (std::find(guard.bridge_fds, guard.bridge_fds + guard.bridge_fd_count, fd) ==
        guard.bridge_fds + guard.bridge_fd_count) {
      return 0;
    }
    PyErr_Format(PyExc_PermissionError,
                 "codeact guard: bridge: %s of fd %ld (the host bridge) is not allowed", event, fd);
    return -1;
  }
  PyObject* text = nullptr;
  if (PyUnicode_Check(path) || PyBytes_Check(path)) {
    text = Py_NewRef(path);
  } else if (path != Py_None) {
    text = PyOS_FSPath(path);  // a pathlib.Path
    if (text == nullptr) {
      PyErr_Clear();
      return 0;
    }
  } else {
    return 0;
  }
  std::string_view view;
  if (PyUnicode_Check(text)) {
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(text, &size);
    if (utf8 == nullptr) PyErr_Clear();
    view = utf8 ? std::string_view(utf8, static_cast<std::size_t>(size)) : std::string_view();
  } else if (PyBytes_Check(text)) {
    view =
        std::string_view(PyBytes_AS_STRING(text), static_cast<std::size_t>(PyBytes_GET_SIZE(text)));
  }
  const bool guarded = IsGuardedProcPath(view);
  if (guarded) {
    PyErr_Format(PyExc_PermissionError, "codeact guard: %s: %s of %R is not allowed", rule.rule,
                 event, text);
  }
  Py_DECREF(text);
  return guarded ? -1 : 0;
}

// The long at args[index], or `fallback` when there is none.
long IntArg(PyObject* args, Py_ssize_t index, long fallback) {
  if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) <= index) return fallback;
  PyObject* value = PyTuple_GET_ITEM(args, index);
  if (!PyLong_Check(value)) return fallback;
  const long v = PyLong_AsLong(value);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return fallback;
  }
  return v;
}

int CheckAttribute(const AuditRule& rule, const char* event, PyObject* args) {
  if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 2) return 0;
  PyObject* name = PyTuple_GET_ITEM(args, 1);
  if (!PyUnicode_Check(name)) return 0;
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &size);
  if (text == nullptr) {
    PyErr_Clear();
    return 0;
  }
  const bool write = std::strcmp(event, "object.__getattr__") != 0;
  if (!IsGuardedAttribute(std::string_view(text, static_cast<std::size_t>(size)), write)) return 0;
  if (!CalledFromUserCode()) return 0;
  PyErr_Format(PyExc_PermissionError, "codeact guard: %s: %s of %s is not allowed", rule.rule,
               write ? "changing" : "reading", text);
  return -1;
}

// An "open" event's (path, mode, flags) that may write: a mode of open() with w, a, x or +, or
// flags of os.open() with O_WRONLY, O_RDWR, O_CREAT, O_TRUNC or O_APPEND.
bool MayWrite(PyObject* args) {
  if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 3) return true;
  PyObject* mode = PyTuple_GET_ITEM(args, 1);
  if (PyUnicode_Check(mode)) {
    const char* text = PyUnicode_AsUTF8(mode);
    if (text == nullptr) {
      PyErr_Clear();
      return true;
    }
    return std::strpbrk(text, "wax+") != nullptr;
  }
  return (IntArg(args, 2, O_WRONLY) & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
}

// A thread start when the interpreter already has max_threads threads (the main one included):
// the run's max_processes where no RLIMIT_NPROC or pids cgroup counts the run's tasks alone (the
// process level of a non-root host). The new thread's state is made after this event, and a
// thread's is deleted with the GIL still held, so the list read under the GIL is exact.
int CheckThreads(const AuditRule& rule) {
  if (guard.max_threads <= 0) return 0;
  long threads = 0;
  for (PyThreadState* t = PyInterpreterState_ThreadHead(PyInterpreterState_Get()); t != nullptr;
       t = PyThreadState_Next(t)) {
    ++threads;
  }
  if (threads < guard.max_threads) return 0;
  PyErr_Format(PyExc_PermissionError,
               "codeact guard: %s: a thread beyond the run's %ld (max_processes) is not allowed",
               rule.rule, guard.max_threads);
  return -1;
}

int AuditHook(const char* event, PyObject* args, void*) {
  const AuditRule rule = ClassifyAuditEvent(event);
  if (!guard.opened_for_writing && rule.action == AuditAction::kCheckPath &&
      std::strcmp(event, "open") == 0 && MayWrite(args)) {
    guard.opened_for_writing = true;
  }
  switch (rule.action) {
    case AuditAction::kAllow:
      return 0;
    case AuditAction::kDeny:
      return Deny(rule, event);
    case AuditAction::kDenyFromUserCode:
      return CalledFromUserCode() ? Deny(rule, event) : 0;
    case AuditAction::kCheckPath:
      return CheckPath(rule, event, args);
    case AuditAction::kCheckSocket:
      // args: (socket, family, type, proto)
      if (IntArg(args, 1, -1) == AF_UNIX) return 0;
      PyErr_Format(PyExc_PermissionError,
                   "codeact guard: %s: sockets other than AF_UNIX are not allowed", rule.rule);
      return -1;
    case AuditAction::kCheckMode: {
      // args: (path, mode, dir_fd)
      const unsigned bits = WeakeningModeBits(event, static_cast<unsigned>(IntArg(args, 1, 0)));
      if (bits == 0) return 0;
      char octal[16];  // PyErr_Format has no %o before Python 3.12
      std::snprintf(octal, sizeof octal, "0o%o", bits);
      PyErr_Format(PyExc_PermissionError,
                   "codeact guard: %s: %s with mode bits %s (setuid, setgid, sticky or "
                   "writable by others) is not allowed",
                   rule.rule, event, octal);
      return -1;
    }
    case AuditAction::kCheckThreads:
      return CheckThreads(rule);
    case AuditAction::kCheckAttribute:
      return CheckAttribute(rule, event, args);
  }
  return 0;
}

// --- the guarded __import__ -------------------------------------------------------------------

bool CheckImport(PyObject* dotted) {
  if (!guard.patterns_parsed) {
    std::vector<std::string> patterns;
    if (!StringList(guard.pattern_list, "imports", patterns)) return false;
    guard.patterns = ImportPatterns(patterns);
    guard.patterns_parsed = true;
  }
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(dotted, &size);
  if (text == nullptr) return false;
  const std::string_view name(text, static_cast<std::size_t>(size));
  if (guard.patterns.Allows(name)) return true;
  if (guard.patterns.Refuses(name)) {
    PyErr_Format(PyExc_PermissionError, "codeact guard: import: %U is not allowed by the policy",
                 dotted);
    return false;
  }
  // Neither allowed nor refused: not available, as a module that is not installed, so that the
  // code's `except ImportError` fallback runs.
  PyObject* message = PyUnicode_FromFormat("No module named '%U'", dotted);
  if (message != nullptr) {
    PyErr_SetImportErrorSubclass(PyExc_ModuleNotFoundError, message, dotted, nullptr);
    Py_DECREF(message);
  }
  return false;
}

// `from module import a, b`: a name that turns out to be a submodule needs its own pattern.
bool CheckFromList(PyObject* name, PyObject* module, PyObject* fromlist) {
  PyObject* iter = PyObject_GetIter(fromlist);
  if (iter == nullptr) {
    PyErr_Clear();
    return true;
  }
  bool ok = true;
  while (PyObject* item = PyIter_Next(iter)) {
    if (PyUnicode_Check(item) && PyUnicode_CompareWithASCIIString(item, "*") != 0) {
      PyObject* value = PyObject_GetAttr(module, item);
      if (value == nullptr) {
        PyErr_Clear();
      } else {
        if (PyModule_Check(value)) {
          PyObject* dotted = PyUnicode_FromFormat("%U.%U", name, item);
          ok = dotted != nullptr && CheckImport(dotted);
          Py_XDECREF(dotted);
        }
        Py_DECREF(value);
      }
    }
    Py_DECREF(item);
    if (!ok) break;
  }
  Py_DECREF(iter);
  if (ok && PyErr_Occurred()) PyErr_Clear();
  return ok;
}

PyObject* GuardedImport(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"name", "globals", "locals", "fromlist", "level", nullptr};
  PyObject* name = nullptr;
  PyObject* globals = nullptr;
  PyObject* locals = nullptr;
  PyObject* fromlist = nullptr;
  int level = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|OOOi:__import__", const_cast<char**>(keywords),
                                   &name, &globals, &locals, &fromlist, &level)) {
    return nullptr;
  }
  // Relative imports: the user's code is no package, so the original refuses them anyway.
  const bool user = level == 0 && CalledFromUserCode();
  if (user && !CheckImport(name)) return nullptr;
  PyObject* module = PyObject_Call(guard.original_import, args, kwargs);
  if (module == nullptr || !user || fromlist == nullptr || fromlist == Py_None) return module;
  const int nonempty = PyObject_IsTrue(fromlist);
  if (nonempty < 0) PyErr_Clear();
  if (nonempty > 0 && !CheckFromList(name, module, fromlist)) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}

PyMethodDef kImportDef = {
    "__import__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(GuardedImport)),
    METH_VARARGS | METH_KEYWORDS,
    "__import__ of the codeact runtime guard: the policy's imports for the user's code."};

// --- limit_imports ----------------------------------------------------------------------------

PyObject* LimitImports(PyObject*, PyObject* patterns) {
  if (guard.imports_limited) return Fail("limit_imports: already limited");
  if (!PyList_Check(patterns)) {
    PyErr_SetString(PyExc_TypeError, "codeact guard: limit_imports needs a list of str");
    return nullptr;
  }
  PyObject* builtins = PyEval_GetBuiltins();  // borrowed dict
  PyObject* original = builtins ? PyDict_GetItemString(builtins, "__import__") : nullptr;
  if (original == nullptr) return Fail("limit_imports: builtins.__import__ is missing");
  guard.imports_limited = true;
  PyObject* frozen =
      PySequence_Tuple(patterns);  // Python's small-object heap, warm in a forked child
  if (frozen == nullptr) return nullptr;
  PyObject* wrapper = PyCFunction_NewEx(&kImportDef, nullptr, nullptr);
  if (wrapper == nullptr) {
    Py_DECREF(frozen);
    return nullptr;
  }
  guard.pattern_list = frozen;
  guard.original_import = Py_NewRef(original);
  const int set = PyDict_SetItemString(builtins, "__import__", wrapper);
  Py_DECREF(wrapper);
  if (set != 0) return nullptr;
  Py_RETURN_NONE;
}

// The zygote's loop (zygote_loop.hpp): returns only in a forked child, with its run token.
PyObject* ServeForksCall(PyObject*, PyObject* args) {
  int socket_fd = 0;
  long long run_cpu_seconds = 0;
  int namespaces = 0;
  if (!PyArg_ParseTuple(args, "iLp", &socket_fd, &run_cpu_seconds, &namespaces)) return nullptr;
  if (run_cpu_seconds <= 0) return Fail("serve_forks: needs the runs' CPU limit");
  const std::string token = ServeForks({socket_fd, run_cpu_seconds, namespaces != 0});
  return PyBytes_FromStringAndSize(token.data(), static_cast<Py_ssize_t>(token.size()));
}

PyObject* OpenedForWriting(PyObject*, PyObject*) {
  return PyBool_FromLong(guard.opened_for_writing);
}

PyMethodDef kMethods[] = {
    {"serve_forks", ServeForksCall, METH_VARARGS,
     "serve_forks(socket_fd, run_cpu_seconds, namespaces) -> bytes: the zygote's loop "
     "(guard/zygote_loop.hpp); returns only in a forked child, with its run token."},
    {"arm", Arm, METH_O,
     "arm(spec) -> int: no_new_privs, Landlock over spec's exec/read/write paths, the seccomp "
     "filters, the audit "
     "hook. Returns the Landlock ABI applied (0: the kernel has none). Once per process."},
    {"limit_imports", LimitImports, METH_O,
     "limit_imports(patterns): the guarded __import__ for the user's code. Once per process."},
    {"opened_for_writing", OpenedForWriting, METH_NOARGS,
     "opened_for_writing() -> bool: whether, since arm, anything was opened in a mode that may "
     "write (the runner flushes open files at the end only then)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT,
                       "_codeact_guard",
                       "The codeact runtime guard (src/guard).",
                       -1,
                       kMethods,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr};

}  // namespace
}  // namespace codeact::internal

PyMODINIT_FUNC PyInit__codeact_guard() { return PyModule_Create(&codeact::internal::kModule); }
