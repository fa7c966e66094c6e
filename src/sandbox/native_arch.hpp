// The AUDIT_ARCH_* value of this build's architecture, which a hand-written seccomp filter checks
// first (a call from another ABI is killed, never matched against this ABI's numbers).
#pragma once

#include <linux/audit.h>

#include <cstdint>

namespace codeact::internal {

#if defined(__x86_64__)
inline constexpr std::uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
inline constexpr std::uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "add this architecture's AUDIT_ARCH_* value"
#endif

}  // namespace codeact::internal
