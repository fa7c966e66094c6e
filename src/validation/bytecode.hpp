// CompileToPyc: a Python source file compiled by the embedded interpreter into the bytes of a
// .pyc (unchecked-hash form), so that a child started from it skips compiling its script. The
// child interpreter must be of the embedded interpreter's minor version (CheckInterpreterMatches),
// which fixes the bytecode format. Needs Validator::Embedded() to have started the interpreter.
#pragma once

#include <string>

#include "codeact/status.hpp"

namespace codeact::internal {

StatusOr<std::string> CompileToPyc(const std::string& source_path);

}  // namespace codeact::internal
