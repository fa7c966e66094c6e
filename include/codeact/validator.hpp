// Validator: parses generated Python with CPython's own `ast` (embedded) and applies a
// ValidationPolicy. Defence in depth and a fast, readable error for the model; not the
// security boundary. Safe to call from many threads (calls are serialised on the GIL).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/policy.hpp"
#include "codeact/status.hpp"

namespace codeact {

struct Violation {
  int line = 0;
  int col = 0;
  std::string rule;     // stable id, e.g. "import-blocked", "builtin-blocked"
  std::string message;  // what is wrong
  std::string hint;     // the allowed alternative
};

struct ValidationReport {
  bool ok = true;
  std::vector<Violation> violations;
};

struct PythonVersion {
  int major = 0;
  int minor = 0;
  bool operator==(const PythonVersion&) const = default;
};

class Validator {
 public:
  virtual ~Validator() = default;

  // Never throws and never crashes on bad code: parser errors, recursion, memory exhaustion,
  // oversize input and the time limit all come back as violations.
  virtual ValidationReport Validate(std::string_view code, const ValidationPolicy& policy) = 0;

  // The import patterns the runtime guard enforces inside the child for `policy`
  // (validator/runtime_policy.py): "name" allows that module, "pkg.*" a package and its public
  // submodules, "!name" denies a module and everything below it. Cached per policy.
  virtual StatusOr<std::vector<std::string>> AllowedImports(const ValidationPolicy& policy) = 0;

  // The builtins `policy` blocks, sorted: what the description tells the model it cannot call.
  // The default answers only for a policy that lists them itself; the embedded validator
  // answers for its defaults too.
  virtual StatusOr<std::vector<std::string>> BlockedBuiltins(const ValidationPolicy& policy);

  // The version of the embedded interpreter (the grammar the validator parses).
  virtual PythonVersion EmbeddedVersion() const = 0;

  // The python3 executable of the installation the embedded interpreter comes from
  // (e.g. /usr/bin/python3.11): the default child interpreter.
  virtual std::string InstallationInterpreter() const = 0;

  // The process-wide embedded validator. Starts the interpreter on first use without touching
  // the host's signal handlers. `data_dir` holds the `validator` package (empty: the installed
  // tree next to the binary, else $CODEACT_DATA_DIR, else the source tree). The first call
  // decides the directory for the life of the process.
  static StatusOr<std::shared_ptr<Validator>> Embedded(const std::string& data_dir = "");
};

// Fails with a clear message unless the interpreter at `python_path` has the embedded
// interpreter's minor version (the grammar differs between minor versions).
Status CheckInterpreterMatches(Validator& validator, const std::string& python_path);

// The same against a known version (the build's own libpython: no interpreter needs to start).
Status CheckInterpreterVersion(const std::string& python_path, PythonVersion embedded);

// The major and minor version of the interpreter at `python_path`: asked once (a start of it),
// then kept in the per-user cache for as long as that file is unchanged.
StatusOr<PythonVersion> InterpreterVersion(const std::string& python_path);

}  // namespace codeact
