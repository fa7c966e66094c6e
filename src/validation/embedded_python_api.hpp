// The seam to the embedded interpreter: what the codeact_python module (embedded_python.cpp, the
// only code that links libpython and includes pybind11) offers the rest of the runtime, which
// loads it on first need (embedded_python_loader.cpp).
//
// Why a module loaded at run time and not a library linked in: loading libpython with a program
// costs ~7 ms on the 2-core test VM (its ~40,000 relocations and the page faults they take), a
// third of a bare interpreter start, and every start of `codeact` paid it before main, on the
// critical path of a one-shot run, even where no validation follows (--help, a rejected flag, a
// run whose validator starts on a thread of its own). Loaded by that thread, it runs beside the
// main thread (which only waits for the memory map while the loader holds it).
//
// Both sides are built by one build with one compiler and share the C++ runtime (libstdc++ is
// loaded once), so the table passes C++ types; kEmbeddedPythonAbi changes whenever it changes.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "codeact/status.hpp"
#include "codeact/validator.hpp"
#include "validation/source_decoding.hpp"

namespace codeact::internal {

inline constexpr int kEmbeddedPythonAbi = 1;

struct EmbeddedPythonApi {
  int abi = kEmbeddedPythonAbi;  // first: the loader checks it (common/loadable_module.hpp)
  // Starts the interpreter (or joins the host's) and loads the validator package from data_dir.
  StatusOr<std::shared_ptr<Validator>> (*start)(const std::string& data_dir);
  // See validation/bytecode.hpp and validation/source_decoding.hpp; need start() to have run.
  StatusOr<std::string> (*compile_to_pyc)(const std::string& source_path);
  std::variant<std::string, CodecFailure> (*decode_with_codec)(std::string_view bytes,
                                                               const std::string& codec);
};

}  // namespace codeact::internal

// The module's one exported symbol.
#define CODEACT_EMBEDDED_PYTHON_ENTRY "codeact_embedded_python_api"
extern "C" const codeact::internal::EmbeddedPythonApi* codeact_embedded_python_api();
