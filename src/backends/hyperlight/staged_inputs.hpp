// The hyperlight guest's /input, staged: the files of several host inputs copied flat into one
// private directory, the one the SDK maps. The guest's /input has no subdirectories, so an
// input is a directory (its regular files) or a single file, and all of them land side by side
// under /input/NAME. Copying (never mapping the user's directory itself) is what keeps a
// symlink, a subdirectory, or a file swapped in while the VM is built from reaching the guest.
//
// Contents are compared by a signature of what is listed (name, size, modification time, inode
// and device of each file): when it differs from the staged copy's, the inputs are staged again
// into a new directory, and since the worker keys its sandboxes by that directory, the next run
// gets a sandbox built on the new contents. A change that keeps a file's size, modification
// time and inode (a rewrite in place that restores the mtime) is not seen.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codeact/status.hpp"
#include "files/mount_capture.hpp"

namespace codeact::internal {

struct InputBounds {
  std::int64_t max_files = 0;
  std::int64_t max_bytes = 0;
};

// One staged copy. Runs hold it (shared) while their worker may read it.
struct StagedInput {
  TempDir dir;
  std::string signature;
  std::vector<std::string> names;  // sorted
};

// The files the inputs hold now, by name, without staging them; an error names the first input
// that cannot be staged (a symlink, a subdirectory, a special file, a name in two inputs, a bound
// passed, an unreadable path).
struct InputFile {
  std::string name;
  std::string source;  // the host path
  std::int64_t size = 0;
  std::string stamp;  // size, mtime, inode, device
};
StatusOr<std::vector<InputFile>> ListInputs(const std::vector<std::string>& inputs,
                                            const InputBounds& bounds);

class InputStager {
 public:
  InputStager(std::vector<std::string> inputs, InputBounds bounds);

  bool empty() const { return inputs_.empty(); }
  const std::vector<std::string>& inputs() const { return inputs_; }

  // The staged copy of the inputs as they are now: the last one when nothing changed since it
  // was made, else a new one. Thread-safe; the copy is made under the lock (runs that find the
  // inputs changed wait for one staging, not one each).
  StatusOr<std::shared_ptr<const StagedInput>> Current();

 private:
  const std::vector<std::string> inputs_;
  const InputBounds bounds_;
  std::mutex mu_;
  std::shared_ptr<const StagedInput> current_;
};

}  // namespace codeact::internal
