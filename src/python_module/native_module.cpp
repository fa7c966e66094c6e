// codeact._native: the pybind11 binding of the public C++ API (include/codeact/) for the Python
// package (python/codeact/). It binds, it does not re-implement: every run, validation, session
// and description is the library's own. The Python side adds the adapters and the
// type-hint-to-schema step only (docs/python.md).
//
// Threads and the GIL. Every call that may wait (a run, a session's run, pause, close) releases
// the GIL and runs on a C++ thread made for that call, joined before the call returns. Why not
// the calling Python thread: the embedded validator joins the running interpreter
// (src/validation: it "starts the interpreter or joins the host's") and keeps a Python thread
// state per OS thread for that thread's life, released when the thread exits; a Python thread's
// own state is deleted by Python before that, a C++ thread's is not. Host tools and approval
// callbacks are Python callables called from the library's threads with the GIL taken for the
// call only.
//
// Python objects held by C++ (a tool's callable in a registry or a snapshot) are released with
// the GIL taken, or leaked when the interpreter is already finalizing.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "codeact/cancellation.hpp"
#include "codeact/execution.hpp"
#include "codeact/executor.hpp"
#include "codeact/file_mount.hpp"
#include "codeact/hyperlight_provider.hpp"
#include "codeact/json.hpp"
#include "codeact/limits.hpp"
#include "codeact/provider.hpp"
#include "codeact/session.hpp"
#include "codeact/status.hpp"
#include "codeact/tool.hpp"
#include "codeact/validator.hpp"

namespace py = pybind11;

namespace codeact::python_module {
namespace {

// The package's one exception type for configuration errors (a bad option, a refused tool): a
// run's outcome is never one, it is a result.
py::handle error_type;

[[noreturn]] void Raise(const Status& status) {
  if (status.code() == StatusCode::kInvalidArgument) throw py::value_error(status.message());
  PyErr_SetString(error_type.ptr(), status.ToString().c_str());
  throw py::error_already_set();
}

void Check(const Status& status) {
  if (!status.ok()) Raise(status);
}

// A Python object owned by C++: released with the GIL, or leaked once the interpreter is going.
class PyRef {
 public:
  explicit PyRef(py::object object) : object_(std::move(object)) {}
  ~PyRef() {
    if (!object_) return;
    if (!Py_IsInitialized() || _Py_IsFinalizing()) {
      object_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    object_ = py::object();
  }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  const py::object& get() const { return object_; }

 private:
  py::object object_;
};

// Runs `fn` on a C++ thread of its own with the GIL released, and returns its value.
template <typename Fn>
auto OnNativeThread(Fn fn) -> decltype(fn()) {
  using T = decltype(fn());
  std::optional<T> value;
  std::exception_ptr failure;
  {
    py::gil_scoped_release release;
    std::thread thread([&] {
      try {
        value.emplace(fn());
      } catch (...) {
        failure = std::current_exception();
      }
    });
    thread.join();
  }
  if (failure) std::rethrow_exception(failure);
  return std::move(*value);
}

std::string PythonExceptionType(const py::error_already_set& e) {
  try {
    return py::str(e.type().attr("__name__")).cast<std::string>();
  } catch (...) {
    return "ToolFailed";
  }
}

// A host tool's handler over a Python callable `call(kwargs_json) -> (ok, payload, message)` or a
// concurrent.futures.Future of that tuple (an async tool running on the caller's event loop): ok
// True -> payload is the result's JSON; False -> payload is the error type. A Future is
// cancelled when the run's call is (ToolCallContext::cancel), which cancels the coroutine.
ToolResult CallPythonTool(const std::shared_ptr<PyRef>& callable, const std::string& kwargs_json,
                          const ToolCallContext& context) {
  std::shared_ptr<PyRef> future;
  {
    py::gil_scoped_acquire gil;
    try {
      py::object answer = callable->get()(kwargs_json);
      if (!py::isinstance<py::tuple>(answer)) {
        future = std::make_shared<PyRef>(std::move(answer));
      } else {
        auto t = answer.cast<py::tuple>();
        if (t[0].cast<bool>()) return ToolResult::Success(t[1].cast<std::string>());
        return ToolResult::Failure(t[1].cast<std::string>(), t[2].cast<std::string>());
      }
    } catch (py::error_already_set& e) {
      return ToolResult::Failure(PythonExceptionType(e), py::str(e.value()).cast<std::string>());
    } catch (const std::exception& e) {
      return ToolResult::Failure("ToolFailed", e.what());
    }
  }
  // Registered and unregistered without the GIL: the callback takes it, in the cancelling thread.
  CancellationRegistration registration = context.cancel.OnCancel([future] {
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
    py::gil_scoped_acquire gil;
    try {
      future->get().attr("cancel")();
    } catch (py::error_already_set&) {
    }
  });
  ToolResult result;
  {
    py::gil_scoped_acquire gil;
    try {
      // Future.result() waits with the GIL released.
      auto t = future->get().attr("result")().cast<py::tuple>();
      result = t[0].cast<bool>()
                   ? ToolResult::Success(t[1].cast<std::string>())
                   : ToolResult::Failure(t[1].cast<std::string>(), t[2].cast<std::string>());
    } catch (py::error_already_set& e) {
      result =
          ToolResult::Failure(context.cancel.cancelled() ? "Cancelled" : PythonExceptionType(e),
                              context.cancel.cancelled() ? "the run ended before the tool returned"
                                                         : py::str(e.value()).cast<std::string>());
    } catch (const std::exception& e) {
      result = ToolResult::Failure("ToolFailed", e.what());
    }
  }
  registration = CancellationRegistration();  // without the GIL, which its callback takes
  return result;
}

IsolationLevel ParseIsolation(const std::string& name) {
  for (IsolationLevel level : {IsolationLevel::kProcess, IsolationLevel::kNamespaces,
                               IsolationLevel::kMicroVm, IsolationLevel::kAuto}) {
    if (IsolationName(level) == name) return level;
  }
  throw py::value_error("isolation must be auto, process, namespaces or microvm, not \"" + name +
                        "\"");
}

// ExecutionLimits by field name: the Python side passes a dict of the fields it sets.
void ApplyLimits(ExecutionLimits& limits, const std::map<std::string, std::int64_t>& values) {
  static const std::map<std::string, std::int64_t ExecutionLimits::*> kFields = {
      {"wall_timeout_ms", &ExecutionLimits::wall_timeout_ms},
      {"cpu_time_s", &ExecutionLimits::cpu_time_s},
      {"memory_bytes", &ExecutionLimits::memory_bytes},
      {"max_file_size_bytes", &ExecutionLimits::max_file_size_bytes},
      {"max_open_files", &ExecutionLimits::max_open_files},
      {"max_processes", &ExecutionLimits::max_processes},
      {"max_workdir_bytes", &ExecutionLimits::max_workdir_bytes},
      {"max_stdout_bytes", &ExecutionLimits::max_stdout_bytes},
      {"max_stderr_bytes", &ExecutionLimits::max_stderr_bytes},
      {"max_output_bytes", &ExecutionLimits::max_output_bytes},
      {"max_frame_bytes", &ExecutionLimits::max_frame_bytes},
      {"max_tool_calls", &ExecutionLimits::max_tool_calls},
      {"max_capture_file_bytes", &ExecutionLimits::max_capture_file_bytes},
      {"max_capture_total_bytes", &ExecutionLimits::max_capture_total_bytes},
      {"max_capture_files", &ExecutionLimits::max_capture_files},
      {"max_result_bytes", &ExecutionLimits::max_result_bytes},
  };
  for (const auto& [name, value] : values) {
    auto it = kFields.find(name);
    if (it == kFields.end()) throw py::value_error("unknown limit \"" + name + "\"");
    limits.*(it->second) = value;
  }
}

std::vector<std::string> LimitNames() {
  return {"wall_timeout_ms",        "cpu_time_s",
          "memory_bytes",           "max_file_size_bytes",
          "max_open_files",         "max_processes",
          "max_workdir_bytes",      "max_stdout_bytes",
          "max_stderr_bytes",       "max_output_bytes",
          "max_frame_bytes",        "max_tool_calls",
          "max_capture_file_bytes", "max_capture_total_bytes",
          "max_capture_files",      "max_result_bytes"};
}

FileMount ToMount(const py::dict& d) {
  FileMount mount;
  mount.host_path = d["host_path"].cast<std::string>();
  mount.mount_path = d["mount_path"].cast<std::string>();
  const std::string mode = d.contains("mode") ? d["mode"].cast<std::string>() : "rw";
  if (mode != "rw" && mode != "ro") throw py::value_error("mount mode must be rw or ro");
  mount.mode = mode == "ro" ? MountMode::kReadOnly : MountMode::kReadWrite;
  if (d.contains("write_bytes_limit"))
    mount.write_bytes_limit = d["write_bytes_limit"].cast<std::int64_t>();
  if (d.contains("disk_bytes_limit"))
    mount.disk_bytes_limit = d["disk_bytes_limit"].cast<std::int64_t>();
  if (d.contains("disk_files_limit"))
    mount.disk_files_limit = d["disk_files_limit"].cast<std::int64_t>();
  auto validated = ValidateMount(std::move(mount));
  if (!validated.ok()) Raise(validated.status());
  return std::move(*validated);
}

py::dict ApprovalRequestDict(const ApprovalRequest& request) {
  py::dict d;
  d["code"] = request.code;
  d["tools_requiring_approval"] = request.tools_requiring_approval;
  d["any_tool"] = request.any_tool;
  d["always_required"] = request.always_required;
  return d;
}

// A run's cancellation: the Python side cancels it when the awaiting task is cancelled.
class Cancellation {
 public:
  bool Cancel(const std::string& reason) {
    py::gil_scoped_release release;  // the tools' cancel callbacks take the GIL
    return source_.Cancel(reason);
  }
  bool cancelled() const { return source_.cancelled(); }
  CancellationToken token() const { return source_.token(); }

 private:
  CancellationSource source_;
};

InvokeOptions MakeInvokeOptions(std::optional<bool> approved, const py::object& approve,
                                const Cancellation* cancel, const py::object& on_output) {
  InvokeOptions options;
  options.approved = approved;
  if (cancel != nullptr) options.cancel = cancel->token();
  if (!on_output.is_none()) {
    // on_output(kind: str, data: bytes), called on the library's delivery thread with the GIL.
    auto callable = std::make_shared<PyRef>(on_output);
    options.on_output = [callable](const OutputChunk& chunk) {
      py::gil_scoped_acquire gil;
      try {
        callable->get()(std::string(OutputStreamKindName(chunk.stream)),
                        py::bytes(chunk.data.data(), chunk.data.size()));
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("codeact on_output");  // a broken consumer loses its chunk
      }
    };
  }
  if (!approve.is_none()) {
    auto callable = std::make_shared<PyRef>(approve);
    options.approve = [callable](const ApprovalRequest& request) {
      py::gil_scoped_acquire gil;
      try {
        return callable->get()(ApprovalRequestDict(request)).cast<bool>();
      } catch (py::error_already_set&) {
        return false;  // a failing approver never approves
      }
    };
  }
  return options;
}

class NativeSession {
 public:
  explicit NativeSession(std::shared_ptr<Session> session) : session_(std::move(session)) {}
  std::string Execute(const std::string& code, std::optional<bool> approved,
                      const py::object& approve, const Cancellation* cancel,
                      const py::object& on_output) {
    InvokeOptions options = MakeInvokeOptions(approved, approve, cancel, on_output);
    auto session = session_;
    return OnNativeThread([&] { return ToJson(session->Execute(code, options)); });
  }
  void Pause() {
    auto session = session_;
    Check(OnNativeThread([&] { return session->Pause(); }));
  }
  void Resume() {
    auto session = session_;
    Check(OnNativeThread([&] { return session->Resume(); }));
  }
  void Close() {
    auto session = session_;
    OnNativeThread([&] {
      session->Close();
      return true;
    });
  }
  bool paused() const { return session_->paused(); }
  bool closed() const { return session_->closed(); }
  std::string closed_reason() const { return session_->closed_reason(); }
  const std::string& id() const { return session_->id(); }
  const std::string& name() const { return session_->name(); }

 private:
  std::shared_ptr<Session> session_;
};

struct ProviderConfig {
  std::string backend = "local";
  std::string isolation = "auto";
  std::map<std::string, std::int64_t> limits;
  std::string policy_json;
  bool always_require_approval = false;
  bool validate = true;
  std::string working_directory;
  std::optional<std::map<std::string, std::string>> environment;
  std::string python_path;
  int warm_pool_size = 2;
  bool validate_in_child = false;
  bool runtime_guard = true;
  bool site_packages = false;
  bool accept_weaker_limits = false;
  std::int64_t session_idle_expiry_ms = 600'000;
  int max_sessions = 16;
  std::int64_t sessions_total_memory_bytes = 4LL << 30;
  std::vector<std::string> hyperlight_inputs;
  std::string hyperlight_sdk_path;
};

class NativeProvider {
 public:
  explicit NativeProvider(const ProviderConfig& config) {
    ProviderOptions options;
    ApplyLimits(options.limits, config.limits);
    if (!config.policy_json.empty()) {
      auto policy = PolicyFromJson(config.policy_json);
      if (!policy.ok()) Raise(policy.status());
      options.policy = std::move(*policy);
    }
    options.approval_mode =
        config.always_require_approval ? ApprovalMode::kAlwaysRequire : ApprovalMode::kNeverRequire;
    options.validate = config.validate;
    options.working_directory = config.working_directory;
    if (config.environment) options.environment = *config.environment;
    options.executor.isolation = ParseIsolation(config.isolation);
    options.executor.python_path = config.python_path;
    options.executor.warm_pool_size = config.warm_pool_size;
    options.executor.validate_in_child = config.validate_in_child;
    options.executor.runtime_guard = config.runtime_guard;
    options.executor.site_packages = config.site_packages;
    options.executor.accept_weaker_limits = config.accept_weaker_limits;
    options.executor.hyperlight.inputs = config.hyperlight_inputs;
    options.executor.hyperlight.sdk_path = config.hyperlight_sdk_path;
    options.sessions.idle_expiry_ms = config.session_idle_expiry_ms;
    options.sessions.max_sessions = config.max_sessions;
    options.sessions.total_memory_bytes = config.sessions_total_memory_bytes;
    StatusOr<std::shared_ptr<CodeActProvider>> created = Status(Internal("not created"));
    if (config.backend == "local") {
      created = OnNativeThread([&] { return LocalCodeActProvider::Create(std::move(options)); });
    } else if (config.backend == "hyperlight") {
      created =
          OnNativeThread([&] { return HyperlightCodeActProvider::Create(std::move(options)); });
    } else {
      throw py::value_error("backend must be local or hyperlight, not \"" + config.backend + "\"");
    }
    if (!created.ok()) Raise(created.status());
    provider_ = std::move(*created);
  }

  void AddTool(const std::string& name, const std::string& description,
               const std::string& schema_json, bool requires_approval, const py::object& call) {
    HostTool tool;
    tool.name = name;
    tool.description = description;
    tool.parameters_schema = schema_json;
    tool.requires_approval = requires_approval;
    auto callable = std::make_shared<PyRef>(call);
    tool.cancellable_handler = [callable](const std::string& kwargs_json,
                                          const ToolCallContext& context) {
      return CallPythonTool(callable, kwargs_json, context);
    };
    Check(provider_->AddTool(std::move(tool)));
  }
  bool RemoveTool(const std::string& name) { return provider_->RemoveTool(name); }
  std::vector<std::string> ToolNames() const {
    std::vector<std::string> names;
    for (const HostTool& t : provider_->ListTools()) names.push_back(t.name);
    return names;
  }
  void AddMount(const py::dict& mount) { Check(provider_->AddMount(ToMount(mount))); }
  bool RemoveMount(const std::string& mount_path) { return provider_->RemoveMount(mount_path); }
  std::vector<py::dict> Mounts() const {
    std::vector<py::dict> out;
    for (const FileMount& m : provider_->ListMounts()) {
      py::dict d;
      d["host_path"] = m.host_path;
      d["mount_path"] = m.mount_path;
      d["mode"] = std::string(MountModeName(m.mode));
      d["kind"] = std::string(MountKindName(m.kind));
      out.push_back(std::move(d));
    }
    return out;
  }
  void AddNetworkTarget(const std::string& target) { Check(provider_->AddNetworkTarget(target)); }
  bool RemoveNetworkTarget(const std::string& target) {
    return provider_->RemoveNetworkTarget(target);
  }
  std::vector<std::string> NetworkTargets() const { return provider_->ListNetworkTargets(); }
  void SetLimits(const std::map<std::string, std::int64_t>& values) {
    ExecutionLimits limits = provider_->Snapshot().limits;
    ApplyLimits(limits, values);
    provider_->SetLimits(limits);
  }

  std::string Execute(const std::string& code, std::optional<bool> approved,
                      const py::object& approve, const Cancellation* cancel,
                      const py::object& on_output) {
    InvokeOptions options = MakeInvokeOptions(approved, approve, cancel, on_output);
    auto provider = provider_;
    return OnNativeThread([&] { return ToJson(provider->Execute(code, options)); });
  }

  NativeSession OpenSession(const std::string& name) {
    SessionOptions options;
    options.name = name;
    auto provider = provider_;
    auto session = OnNativeThread([&] { return provider->OpenSession(options); });
    if (!session.ok()) Raise(session.status());
    return NativeSession(std::move(*session));
  }

  // {"definition": JSON text in `format`'s shape, "instructions": text}.
  py::dict Describe(const std::string& format, bool tools_visible_to_model) const {
    auto parsed = ParseDefinitionFormat(format);
    if (!parsed) {
      throw py::value_error("format must be openai, openai-responses, anthropic or mcp, not \"" +
                            format + "\"");
    }
    ExecuteCodeFunction function(provider_);
    py::dict d;
    d["definition"] = function.Definition(*parsed);
    d["instructions"] = provider_->Instructions(tools_visible_to_model);
    return d;
  }

  std::string backend() const { return std::string(BackendName(provider_->executor().backend())); }
  std::string isolation() const {
    return std::string(IsolationName(provider_->executor().isolation()));
  }

 private:
  std::shared_ptr<CodeActProvider> provider_;
};

// ProviderConfig's fields, one property each.
void BindProviderConfig(py::module_& m) {
  py::class_<ProviderConfig>(m, "ProviderConfig")
      .def(py::init<>())
      .def_readwrite("backend", &ProviderConfig::backend)
      .def_readwrite("isolation", &ProviderConfig::isolation)
      .def_readwrite("limits", &ProviderConfig::limits)
      .def_readwrite("policy_json", &ProviderConfig::policy_json)
      .def_readwrite("always_require_approval", &ProviderConfig::always_require_approval)
      .def_readwrite("validate", &ProviderConfig::validate)
      .def_readwrite("working_directory", &ProviderConfig::working_directory)
      .def_readwrite("environment", &ProviderConfig::environment)
      .def_readwrite("python_path", &ProviderConfig::python_path)
      .def_readwrite("warm_pool_size", &ProviderConfig::warm_pool_size)
      .def_readwrite("validate_in_child", &ProviderConfig::validate_in_child)
      .def_readwrite("runtime_guard", &ProviderConfig::runtime_guard)
      .def_readwrite("site_packages", &ProviderConfig::site_packages)
      .def_readwrite("accept_weaker_limits", &ProviderConfig::accept_weaker_limits)
      .def_readwrite("session_idle_expiry_ms", &ProviderConfig::session_idle_expiry_ms)
      .def_readwrite("max_sessions", &ProviderConfig::max_sessions)
      .def_readwrite("sessions_total_memory_bytes", &ProviderConfig::sessions_total_memory_bytes)
      .def_readwrite("hyperlight_inputs", &ProviderConfig::hyperlight_inputs)
      .def_readwrite("hyperlight_sdk_path", &ProviderConfig::hyperlight_sdk_path);
}

}  // namespace
}  // namespace codeact::python_module

PYBIND11_MODULE(_native, m) {
  using namespace codeact;
  using namespace codeact::python_module;
  m.doc() = "codeact's C++ runtime, bound for the codeact package (docs/python.md)";
  static py::exception<std::runtime_error> error(m, "CodeActError", PyExc_RuntimeError);
  error_type = error;
  m.attr("RESULT_SCHEMA_VERSION") = kResultSchemaVersion;
  m.def("limit_names", &LimitNames);

  // The embedded validator, started in (joined to) this interpreter from `data_dir`. The package
  // calls it once before the first provider so that it names the directory.
  m.def("start_validator", [](const std::string& data_dir) {
    auto validator = Validator::Embedded(data_dir);
    if (!validator.ok()) Raise(validator.status());
    py::dict d;
    d["version"] = py::make_tuple((*validator)->EmbeddedVersion().major,
                                  (*validator)->EmbeddedVersion().minor);
    d["interpreter"] = (*validator)->InstallationInterpreter();
    return d;
  });

  py::class_<Cancellation>(m, "Cancellation")
      .def(py::init<>())
      .def("cancel", &Cancellation::Cancel, py::arg("reason"))
      .def_property_readonly("cancelled", &Cancellation::cancelled);

  BindProviderConfig(m);

  py::class_<NativeSession>(m, "Session")
      .def("execute", &NativeSession::Execute, py::arg("code"), py::arg("approved") = py::none(),
           py::arg("approve") = py::none(), py::arg("cancel") = nullptr,
           py::arg("on_output") = py::none())
      .def("pause", &NativeSession::Pause)
      .def("resume", &NativeSession::Resume)
      .def("close", &NativeSession::Close)
      .def_property_readonly("paused", &NativeSession::paused)
      .def_property_readonly("closed", &NativeSession::closed)
      .def_property_readonly("closed_reason", &NativeSession::closed_reason)
      .def_property_readonly("id", &NativeSession::id)
      .def_property_readonly("name", &NativeSession::name);

  py::class_<NativeProvider>(m, "Provider")
      .def(py::init<const ProviderConfig&>())
      .def("add_tool", &NativeProvider::AddTool, py::arg("name"), py::arg("description"),
           py::arg("schema_json"), py::arg("requires_approval"), py::arg("call"))
      .def("remove_tool", &NativeProvider::RemoveTool)
      .def("tool_names", &NativeProvider::ToolNames)
      .def("add_mount", &NativeProvider::AddMount)
      .def("remove_mount", &NativeProvider::RemoveMount)
      .def("mounts", &NativeProvider::Mounts)
      .def("add_network_target", &NativeProvider::AddNetworkTarget)
      .def("remove_network_target", &NativeProvider::RemoveNetworkTarget)
      .def("network_targets", &NativeProvider::NetworkTargets)
      .def("set_limits", &NativeProvider::SetLimits)
      .def("execute", &NativeProvider::Execute, py::arg("code"), py::arg("approved") = py::none(),
           py::arg("approve") = py::none(), py::arg("cancel") = nullptr,
           py::arg("on_output") = py::none())
      .def("open_session", &NativeProvider::OpenSession, py::arg("name") = "")
      .def("describe", &NativeProvider::Describe, py::arg("format"),
           py::arg("tools_visible_to_model") = false)
      .def_property_readonly("backend", &NativeProvider::backend)
      .def_property_readonly("isolation", &NativeProvider::isolation);
}
