// Where the runtime finds its Python package (validator/) and child-side files (resources/).
#pragma once

#include <string>

namespace codeact::internal {

// In order: $CODEACT_DATA_DIR; <binary dir>/../share/codeact when installed; the source tree.
std::string DefaultDataDir();

}  // namespace codeact::internal
