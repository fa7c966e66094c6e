// Where the runtime finds its Python package (validator/) and child-side files (resources/).
#pragma once

#include <string>

namespace codeact::internal {

// In order: $CODEACT_DATA_DIR; <binary dir>/../share/codeact when installed next to the binary;
// the source tree for programs inside this build tree; the configured install prefix; the
// source tree. data_dir.cpp explains each step.
std::string DefaultDataDir();

}  // namespace codeact::internal
