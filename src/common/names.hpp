// The names of the public enums, as they appear in the result JSON, on the command line and in
// the Python API: one table each, read by the *Name functions and by every parser of a name.
#pragma once

#include "codeact/execution.hpp"
#include "codeact/executor.hpp"
#include "codeact/file_mount.hpp"
#include "common/enum_names.hpp"

namespace codeact::internal {

inline constexpr auto kOutcomeNames =
    MakeEnumNames<Outcome>("internal_error", {{Outcome::kOk, "ok"},
                                              {Outcome::kError, "error"},
                                              {Outcome::kValidationFailed, "validation_failed"},
                                              {Outcome::kApprovalRequired, "approval_required"},
                                              {Outcome::kTimeout, "timeout"},
                                              {Outcome::kMemoryLimit, "memory_limit"},
                                              {Outcome::kCpuLimit, "cpu_limit"},
                                              {Outcome::kOutputLimit, "output_limit"},
                                              {Outcome::kDiskLimit, "disk_limit"},
                                              {Outcome::kKilled, "killed"},
                                              {Outcome::kSetupError, "setup_error"},
                                              {Outcome::kUnavailable, "unavailable"},
                                              {Outcome::kCancelled, "cancelled"},
                                              {Outcome::kInternalError, "internal_error"}});

inline constexpr auto kSessionStateNames =
    MakeEnumNames<SessionState>("new", {{SessionState::kNew, "new"},
                                        {SessionState::kKept, "kept"},
                                        {SessionState::kRestarted, "restarted"}});

inline constexpr auto kBackendNames = MakeEnumNames<BackendKind>(
    "unknown", {{BackendKind::kLocal, "local"}, {BackendKind::kHyperlight, "hyperlight"}});

inline constexpr auto kIsolationNames =
    MakeEnumNames<IsolationLevel>("auto", {{IsolationLevel::kProcess, "process"},
                                           {IsolationLevel::kNamespaces, "namespaces"},
                                           {IsolationLevel::kMicroVm, "microvm"},
                                           {IsolationLevel::kAuto, "auto"}});

inline constexpr auto kMountModeNames = MakeEnumNames<MountMode>(
    "unknown", {{MountMode::kReadWrite, "rw"}, {MountMode::kReadOnly, "ro"}});

inline constexpr auto kMountKindNames = MakeEnumNames<MountKind>(
    "directory", {{MountKind::kDirectory, "directory"}, {MountKind::kFile, "file"}});

}  // namespace codeact::internal
