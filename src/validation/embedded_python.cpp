// The embedded interpreter's side of the seam in validation/embedded_python_api.hpp: the only
// translation unit that includes pybind11, built into the codeact_python module, which alone links
// libpython (the runtime loads it on first need).
//
// The interpreter starts once per process without installing signal handlers, then releases
// the GIL; each Validate call takes the GIL only while the Python package runs. A watchdog
// thread enforces the validation time limit by raising TimeoutError asynchronously in the
// validating thread.
#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "codeact/validator.hpp"
#include "common/utf8.hpp"
#include "validation/embedded_python_api.hpp"
#include "validation/source_decoding.hpp"

namespace py = pybind11;

namespace codeact {
namespace {

using Clock = std::chrono::steady_clock;

ValidationReport Reject(std::string rule, std::string message, std::string hint) {
  ValidationReport report;
  report.ok = false;
  report.violations.push_back({0, 0, std::move(rule), std::move(message), std::move(hint)});
  return report;
}

py::dict PolicyToDict(const ValidationPolicy& policy) {
  py::dict d;
  if (policy.allowed_imports) d["allowed_imports"] = *policy.allowed_imports;
  if (policy.blocked_builtins) d["blocked_builtins"] = *policy.blocked_builtins;
  if (policy.blocked_imports) d["blocked_imports"] = *policy.blocked_imports;
  if (policy.allowed_builtins) d["allowed_builtins"] = *policy.allowed_builtins;
  if (policy.allowed_dunder_attributes) {
    d["allowed_dunder_attributes"] = *policy.allowed_dunder_attributes;
  }
  d["extra_allowed_imports"] = policy.extra_allowed_imports;
  d["extra_blocked_imports"] = policy.extra_blocked_imports;
  d["allow_dynamic_format"] = policy.allow_dynamic_format;
  d["max_code_bytes"] = policy.max_code_bytes;
  d["max_ast_depth"] = policy.max_ast_depth;
  if (!policy.network_tools.empty()) d["network_tools"] = policy.network_tools;
  d["tool_names"] = policy.tool_names;
  return d;
}

ValidationReport ReportFromPython(const py::handle& result) {
  ValidationReport report;
  report.ok = result["ok"].cast<bool>();
  for (const py::handle v : result["violations"]) {
    report.violations.push_back({v["line"].cast<int>(), v["col"].cast<int>(),
                                 v["rule"].cast<std::string>(), v["message"].cast<std::string>(),
                                 v["hint"].cast<std::string>()});
  }
  if (!report.ok && report.violations.empty()) {
    report.violations.push_back(
        {0, 0, "internal-error", "validator rejected without a reason", "report this as a bug"});
  }
  return report;
}

// Holds the GIL for one call. Each OS thread keeps its Python thread state between calls (one
// PyGILState count is held for the thread's life): creating and deleting a thread state on every
// call costs more than a small validation. Built on the PyGILState API so that pybind11's own
// GIL guards, which use it too, see the same thread state. Deleted when the thread exits.
class ThreadGil {
 public:
  ThreadGil() {
    // A caller that already holds the GIL (a host embedding Python itself) keeps it untouched.
    if (!PyGILState_Check()) Keeper().Hold();
    state_ = PyGILState_Ensure();
  }
  ~ThreadGil() { PyGILState_Release(state_); }
  ThreadGil(const ThreadGil&) = delete;
  ThreadGil& operator=(const ThreadGil&) = delete;

 private:
  struct ThreadStateKeeper {
    bool held = false;
    PyGILState_STATE first{};
    PyThreadState* saved = nullptr;
    void Hold() {
      if (held) return;
      first = PyGILState_Ensure();
      saved = PyEval_SaveThread();
      held = true;
    }
    ~ThreadStateKeeper() {
      if (!held) return;
      PyEval_RestoreThread(saved);
      PyGILState_Release(first);
    }
  };
  static ThreadStateKeeper& Keeper() {
    thread_local ThreadStateKeeper keeper;
    return keeper;
  }
  PyGILState_STATE state_;
};

// The policy's fields as one string: the cache key of AllowedImports.
std::string PolicyKey(const ValidationPolicy& p) {
  std::string key;
  auto list = [&key](const std::vector<std::string>& items) {
    key += std::to_string(items.size()) + "[";
    for (const auto& item : items) key += std::to_string(item.size()) + ":" + item;
    key += "]";
  };
  for (const auto* optional :
       {&p.allowed_imports, &p.blocked_builtins, &p.allowed_dunder_attributes, &p.blocked_imports,
        &p.allowed_builtins}) {
    if (*optional) {
      list(**optional);
    } else {
      key += "-";
    }
  }
  list(p.extra_allowed_imports);
  list(p.extra_blocked_imports);
  return key;
}

class EmbeddedValidator final : public Validator {
 public:
  EmbeddedValidator(py::object validate, py::object import_patterns, py::object blocked_builtins,
                    PythonVersion version, std::string interpreter)
      : validate_(std::move(validate)),
        import_patterns_(std::move(import_patterns)),
        blocked_builtins_(std::move(blocked_builtins)),
        version_(version),
        interpreter_(std::move(interpreter)) {
    watchdog_ = std::thread([this] { WatchdogLoop(); });
  }

  // The process-wide instance lives until exit; Python objects are never released after
  // the interpreter may have gone away.
  ~EmbeddedValidator() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    validate_.release();
    import_patterns_.release();
  }

  ValidationReport Validate(std::string_view code, const ValidationPolicy& policy) override {
    if (policy.max_code_bytes > 0 &&
        static_cast<std::int64_t>(code.size()) > policy.max_code_bytes) {
      return Reject("code-too-large",
                    "code is " + std::to_string(code.size()) + " bytes; the limit is " +
                        std::to_string(policy.max_code_bytes) + " bytes",
                    "split the work into several smaller execute_code calls");
    }
    // Python could not even make a str of it; say where, rather than fail inside.
    if (auto bad = internal::Utf8Violation(code)) {
      ValidationReport report;
      report.ok = false;
      report.violations.push_back(std::move(*bad));
      return report;
    }
    try {
      ThreadGil gil;
      const unsigned long thread_id = PyThread_get_thread_ident();
      const std::uint64_t call = Register(thread_id, policy.validation_timeout_ms);
      ValidationReport report;
      bool timed_out = false;
      try {
        py::object result = validate_(py::str(code.data(), code.size()), PolicyToDict(policy));
        report = ReportFromPython(result);
      } catch (py::error_already_set& e) {
        timed_out = e.matches(PyExc_TimeoutError);
        report = timed_out ? ValidationReport{}
                           : Reject("internal-error", std::string("validator failed: ") + e.what(),
                                    "report this as a bug");
      } catch (const py::cast_error& e) {
        report = Reject("internal-error",
                        std::string("validator returned a malformed report: ") + e.what(),
                        "report this as a bug");
      }
      timed_out = Unregister(call, thread_id) || timed_out;
      if (timed_out) {
        return Reject(
            "validation-timeout",
            "validation took longer than " + std::to_string(policy.validation_timeout_ms) + " ms",
            "submit shorter, simpler code");
      }
      return report;
    } catch (const std::exception& e) {
      return Reject("internal-error", std::string("validator failed: ") + e.what(),
                    "report this as a bug");
    }
  }

  StatusOr<std::vector<std::string>> AllowedImports(const ValidationPolicy& policy) override {
    const std::string key = PolicyKey(policy);
    {
      std::lock_guard lock(imports_mu_);
      if (auto it = imports_cache_.find(key); it != imports_cache_.end()) return it->second;
    }
    StatusOr<std::vector<std::string>> patterns =
        PolicyStrings(import_patterns_, policy, "import patterns", "runtime_import_patterns");
    if (!patterns.ok()) return patterns;
    std::lock_guard lock(imports_mu_);
    if (imports_cache_.size() >= kImportsCacheLimit) imports_cache_.clear();
    imports_cache_.emplace(key, *patterns);
    return patterns;
  }

  StatusOr<std::vector<std::string>> BlockedBuiltins(const ValidationPolicy& policy) override {
    return PolicyStrings(blocked_builtins_, policy, "blocked builtins", "blocked_builtin_names");
  }

  PythonVersion EmbeddedVersion() const override { return version_; }
  std::string InstallationInterpreter() const override { return interpreter_; }

 private:
  // `fn(policy)`, a function of validator.runtime_policy named `name`, as a list of str:
  // INVALID_ARGUMENT for what the policy gets wrong (`what` names the answer), INTERNAL for a
  // malformed answer or a failed call.
  static StatusOr<std::vector<std::string>> PolicyStrings(const py::object& fn,
                                                          const ValidationPolicy& policy,
                                                          const char* what, const char* name) {
    try {
      ThreadGil gil;
      try {
        return fn(PolicyToDict(policy)).cast<std::vector<std::string>>();
      } catch (py::error_already_set& e) {
        return InvalidArgument(std::string("the policy's ") + what + ": " + e.what());
      } catch (const py::cast_error& e) {
        return Internal(std::string(name) + " returned a malformed list: " + e.what());
      }
    } catch (const std::exception& e) {
      return Internal(std::string(name) + " failed: " + e.what());
    }
  }

  struct Call {
    unsigned long thread_id;
    Clock::time_point deadline;
    bool fired = false;
  };

  std::uint64_t Register(unsigned long thread_id, std::int64_t timeout_ms) {
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(std::max<std::int64_t>(timeout_ms, 1));
    std::lock_guard lock(mu_);
    const std::uint64_t id = ++next_call_;
    calls_[id] = Call{thread_id, deadline};
    // Waking the watchdog costs a context switch per call; it is only needed when this deadline
    // comes before the one it already sleeps toward.
    if (deadline < watchdog_wakes_at_) cv_.notify_all();
    return id;
  }

  // Called with the GIL held, so the watchdog (which also holds the GIL to fire) cannot race
  // past this point: a fired exception still pending is cleared here. Returns whether it fired.
  bool Unregister(std::uint64_t id, unsigned long thread_id) {
    std::lock_guard lock(mu_);
    const bool fired = calls_[id].fired;
    calls_.erase(id);
    if (fired) PyThreadState_SetAsyncExc(thread_id, nullptr);
    return fired;
  }

  void WatchdogLoop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      auto next = Clock::time_point::max();
      std::uint64_t due = 0;
      for (const auto& [id, call] : calls_) {
        if (!call.fired && call.deadline < next) {
          next = call.deadline;
          due = id;
        }
      }
      watchdog_wakes_at_ = next;
      if (due == 0) {
        cv_.wait(lock);
        continue;
      }
      if (cv_.wait_until(lock, next) != std::cv_status::timeout) continue;
      lock.unlock();
      {
        py::gil_scoped_acquire gil;
        std::lock_guard relock(mu_);
        auto it = calls_.find(due);
        if (it != calls_.end() && !it->second.fired) {
          it->second.fired = true;
          PyThreadState_SetAsyncExc(it->second.thread_id, PyExc_TimeoutError);
        }
      }
      lock.lock();
    }
  }

  static constexpr std::size_t kImportsCacheLimit = 64;

  py::object validate_;
  py::object import_patterns_;   // validator.runtime_policy.runtime_import_patterns
  py::object blocked_builtins_;  // validator.runtime_policy.blocked_builtin_names
  std::mutex imports_mu_;
  std::map<std::string, std::vector<std::string>> imports_cache_;  // by PolicyKey
  const PythonVersion version_;
  const std::string interpreter_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Call> calls_;
  std::uint64_t next_call_ = 0;
  Clock::time_point watchdog_wakes_at_ = Clock::time_point::min();  // until the loop first runs
  bool stopping_ = false;
  std::thread watchdog_;
};

StatusOr<std::shared_ptr<Validator>> StartEmbedded(const std::string& data_dir) {
  const bool owns_interpreter = !Py_IsInitialized();
  try {
    if (owns_interpreter) {
      // As pybind11's default (the environment read, no signal handlers), but without `site`:
      // the validator needs the standard library only, and site's .pth files and sitecustomize
      // took ~a quarter of the start of a one-shot `codeact run`. Nothing of the program's own
      // directory goes on sys.path either.
      PyConfig config;
      PyConfig_InitIsolatedConfig(&config);
      config.isolated = 0;
      config.use_environment = 1;
      config.install_signal_handlers = 0;
      config.site_import = 0;
      py::initialize_interpreter(&config, 0, nullptr, /*add_program_dir_to_path=*/false);
    }
    std::shared_ptr<Validator> validator;
    {
      py::gil_scoped_acquire gil;
      py::module_ sys = py::module_::import("sys");
      sys.attr("dont_write_bytecode") = true;
      sys.attr("path").attr("insert")(0, data_dir);
      py::object validate = py::module_::import("validator").attr("validate");
      py::module_ runtime_policy = py::module_::import("validator.runtime_policy");
      py::object import_patterns = runtime_policy.attr("runtime_import_patterns");
      py::object blocked_builtins = runtime_policy.attr("blocked_builtin_names");
      py::object info = sys.attr("version_info");
      PythonVersion version{info.attr("major").cast<int>(), info.attr("minor").cast<int>()};
      const std::string interpreter = sys.attr("base_prefix").cast<std::string>() + "/bin/python" +
                                      std::to_string(version.major) + "." +
                                      std::to_string(version.minor);
      validator =
          std::make_shared<EmbeddedValidator>(std::move(validate), std::move(import_patterns),
                                              std::move(blocked_builtins), version, interpreter);
    }
    // Hand the GIL back: from here on each Validate call takes it only for its own duration.
    if (owns_interpreter) PyEval_SaveThread();
    return validator;
  } catch (const std::exception& e) {
    if (owns_interpreter && PyGILState_Check()) PyEval_SaveThread();
    return FailedPrecondition("cannot load the validator package from " + data_dir + ": " +
                              e.what());
  }
}

StatusOr<std::string> CompileToPyc(const std::string& source_path) {
  if (!Py_IsInitialized()) return FailedPrecondition("the embedded interpreter is not started");
  try {
    ThreadGil gil;
    try {
      py::module_ external = py::module_::import("importlib._bootstrap_external");
      py::object io = py::module_::import("io");
      py::bytes source = io.attr("open")(source_path, "rb").attr("read")();
      // The code keeps the source's path as its file name: tracebacks and the runner's own frame
      // filter see the same name whether it runs from source or from this file.
      py::object code =
          py::module_::import("builtins").attr("compile")(source, source_path, "exec", 0, true);
      // importlib.util.source_hash, without importing importlib.util.
      py::object hash = py::module_::import("_imp").attr("source_hash")(
          external.attr("_RAW_MAGIC_NUMBER"), source);
      py::bytes pyc = py::module_::import("builtins")
                          .attr("bytes")(external.attr("_code_to_hash_pyc")(code, hash, false));
      return std::string(pyc);
    } catch (const py::error_already_set& e) {
      return FailedPrecondition("cannot compile " + source_path + ": " + e.what());
    }
  } catch (const std::exception& e) {
    return Internal(std::string("CompileToPyc: ") + e.what());
  }
}

std::variant<std::string, internal::CodecFailure> DecodeWithPythonCodec(std::string_view bytes,
                                                                        const std::string& codec) {
  using internal::CodecFailure;
  if (!Py_IsInitialized()) {
    return CodecFailure{true, 0, "the embedded interpreter is not available"};
  }
  try {
    ThreadGil gil;
    try {
      py::object text = py::bytes(bytes.data(), bytes.size()).attr("decode")(codec);
      if (!py::isinstance<py::str>(text)) return CodecFailure{true, 0, "not a text encoding"};
      return text.cast<std::string>();  // UTF-8; a lone surrogate fails here
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_LookupError))
        return CodecFailure{true, 0, py::str(e.value()).cast<std::string>()};
      if (e.matches(PyExc_UnicodeDecodeError)) {
        const auto start = e.value().attr("start").cast<std::size_t>();
        return CodecFailure{false, start, py::str(e.value().attr("reason")).cast<std::string>()};
      }
      return CodecFailure{false, 0, e.what()};
    }
  } catch (const std::exception& e) {  // e.g. a decoded lone surrogate that is not UTF-8
    return CodecFailure{false, 0,
                        std::string("the decoded text is not valid Unicode: ") + e.what()};
  }
}

}  // namespace
}  // namespace codeact

extern "C" __attribute__((visibility("default"))) const codeact::internal::EmbeddedPythonApi*
codeact_embedded_python_api() {
  static const codeact::internal::EmbeddedPythonApi api{
      codeact::internal::kEmbeddedPythonAbi, &codeact::StartEmbedded, &codeact::CompileToPyc,
      &codeact::DecodeWithPythonCodec};
  return &api;
}
