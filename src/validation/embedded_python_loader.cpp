// The runtime's side of the seam in validation/embedded_python_api.hpp: the codeact_python module
// is loaded on first need, once per process, and never unloaded (an interpreter cannot be).
#include <mutex>

#include "codeact/validator.hpp"
#include "common/data_dir.hpp"
#include "common/loadable_module.hpp"
#include "validation/bytecode.hpp"
#include "validation/embedded_python_api.hpp"

namespace codeact {
namespace internal {
namespace {

StatusOr<const EmbeddedPythonApi*> Load() {
  // Global: CPython's extension modules are not linked against libpython; they find its symbols
  // in the global scope, as in a program that links it.
  auto table = LoadModuleTable(EmbeddedPythonModulePath(), CODEACT_EMBEDDED_PYTHON_ENTRY,
                               "the embedded interpreter's module codeact_python.so",
                               "CODEACT_PYTHON_MODULE", kEmbeddedPythonAbi, /*global=*/true);
  if (!table.ok()) return table.status();
  return static_cast<const EmbeddedPythonApi*>(*table);
}

StatusOr<const EmbeddedPythonApi*> Api() {
  static std::once_flag once;
  static StatusOr<const EmbeddedPythonApi*> api = Unavailable("not loaded");
  std::call_once(once, [] { api = Load(); });
  return api;
}

}  // namespace

StatusOr<std::string> CompileToPyc(const std::string& source_path) {
  auto api = Api();
  if (!api.ok()) return api.status();
  return (*api)->compile_to_pyc(source_path);
}

std::variant<std::string, CodecFailure> DecodeWithPythonCodec(std::string_view bytes,
                                                              const std::string& codec) {
  auto validator = Validator::Embedded();  // starts the interpreter when nothing has yet
  auto api = Api();
  if (!validator.ok() || !api.ok()) {
    return CodecFailure{true, 0, "the embedded interpreter is not available"};
  }
  return (*api)->decode_with_codec(bytes, codec);
}

}  // namespace internal

StatusOr<std::shared_ptr<Validator>> Validator::Embedded(const std::string& data_dir) {
  static std::mutex mu;
  // Deliberately leaked: Python objects must not be released during static destruction.
  static auto* instance = new StatusOr<std::shared_ptr<Validator>>(Unavailable("not started"));
  static bool started = false;
  std::lock_guard lock(mu);
  if (!started) {
    started = true;
    auto api = internal::Api();
    *instance = api.ok() ? (*api)->start(data_dir.empty() ? internal::DefaultDataDir() : data_dir)
                         : StatusOr<std::shared_ptr<Validator>>(api.status());
  }
  return *instance;
}

}  // namespace codeact
