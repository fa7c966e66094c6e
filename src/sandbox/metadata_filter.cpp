#include "sandbox/metadata_filter.hpp"

#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>

#include "sandbox/native_arch.hpp"

namespace codeact::internal {
namespace {

std::vector<sock_filter> RouteCalls(std::uint32_t action) {
  const std::vector<int>& calls = MetadataSystemCalls();
  std::vector<sock_filter> f;
  auto stmt = [&](std::uint16_t code, std::uint32_t k) { f.push_back(BPF_STMT(code, k)); };
  auto jump = [&](std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
    f.push_back(BPF_JUMP(code, k, jt, jf));
  };
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  jump(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 1, 0);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
  // One comparison per call: the matching one jumps over the rest to the action.
  const auto n = calls.size();
  for (std::size_t i = 0; i < n; ++i) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(calls[i]),
         static_cast<std::uint8_t>(n - i), 0);
  }
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  stmt(BPF_RET | BPF_K, action);
  return f;
}

}  // namespace

const std::vector<int>& MetadataSystemCalls() {
  static const std::vector<int> calls = {
#ifdef __NR_chmod
      __NR_chmod,
#endif
#ifdef __NR_chown
      __NR_chown,
#endif
#ifdef __NR_lchown
      __NR_lchown,
#endif
#ifdef __NR_utime
      __NR_utime,
#endif
#ifdef __NR_utimes
      __NR_utimes,
#endif
#ifdef __NR_futimesat
      __NR_futimesat,
#endif
      __NR_fchmod,
      __NR_fchmodat,
      __NR_fchown,
      __NR_fchownat,
      __NR_utimensat,
      __NR_setxattr,
      __NR_lsetxattr,
      __NR_fsetxattr,
      __NR_removexattr,
      __NR_lremovexattr,
      __NR_fremovexattr,
      452,  // fchmodat2 (Linux 6.6; the main filter answers ENOSYS today)
  };
  return calls;
}

std::vector<sock_filter> MetadataNotifyFilter() { return RouteCalls(SECCOMP_RET_USER_NOTIF); }

std::vector<sock_filter> MetadataFailClosedFilter() {
  return RouteCalls(SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
}

std::string EncodeMetadataHello(long uid, long gid, const std::vector<std::string>& roots) {
  std::string out(kMetadataMagic);
  out += '\0';
  out += std::to_string(uid);
  out += '\0';
  out += std::to_string(gid);
  for (const std::string& root : roots) {
    out += '\0';
    out += root;
  }
  return out;
}

bool DecodeMetadataHello(std::string_view payload, MetadataHello& out) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = payload.find('\0', start);
    parts.push_back(payload.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (parts.size() < 3 || parts[0] != kMetadataMagic) return false;
  auto number = [](std::string_view text, long& value) {
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && p == text.data() + text.size();
  };
  MetadataHello hello;
  if (!number(parts[1], hello.uid) || !number(parts[2], hello.gid)) return false;
  for (std::size_t i = 3; i < parts.size(); ++i) {
    if (parts[i].empty() || parts[i][0] != '/') return false;
    hello.roots.emplace_back(parts[i]);
  }
  out = std::move(hello);
  return true;
}

}  // namespace codeact::internal
