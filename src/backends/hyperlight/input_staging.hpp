// InputStaging: the hyperlight backend's input directories merged into one private, flat copy
// that the guest sees read-only at /input. The guest's filesystem is flat (/input/NAME), so the
// regular files at the top of each input directory are staged; a subdirectory's files cannot be
// reached there and are not copied. Refused, with the path: a symlink anywhere in an input tree
// (it could name any host file), a name found in two inputs, an entry that is neither a regular
// file nor a directory, and inputs over kMaxStagedInputFiles / kMaxStagedInputBytes.
//
// The copy is taken again only when an input changes (InputSignature: names, sizes, times and
// inodes); its digest goes into the sandbox's fingerprint, so a change builds a new sandbox and
// a run never sees the inputs of another.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codeact/status.hpp"
#include "files/mount_capture.hpp"

namespace codeact::internal {

inline constexpr std::int64_t kMaxStagedInputFiles = 10'000;
inline constexpr std::int64_t kMaxStagedInputBytes = 1LL << 30;
// Entries walked per input tree looking for symlinks (subdirectories included).
inline constexpr std::int64_t kMaxInputTreeEntries = 100'000;

struct StagedInputs {
  TempDir dir;            // the staged copy: what the guest sees at /input
  std::string signature;  // InputSignature of the inputs it was copied from
  std::string digest;     // SHA-256 of the signature: part of the sandbox's fingerprint
  std::int64_t files = 0;
  std::int64_t bytes = 0;
};

// What the inputs look like now, or why they cannot be staged (the refusals above).
StatusOr<std::string> InputSignature(const std::vector<std::string>& input_dirs);

// A fresh staged copy of `input_dirs`. Fails, leaving nothing behind, on the refusals above or
// when a file changes while it is copied into a symlink or a non-regular file.
StatusOr<std::shared_ptr<const StagedInputs>> StageInputs(
    const std::vector<std::string>& input_dirs);

}  // namespace codeact::internal
