// SecureRandomBytes (secure_random.hpp).
#include "common/secure_random.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace codeact::internal {

std::string SecureRandomBytes(std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::getrandom(out.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      std::fprintf(stderr,
                   "codeact: getrandom failed; refusing to continue with weak randomness\n");
      std::abort();
    }
    got += static_cast<std::size_t>(r);
  }
  return out;
}

std::string SecureRandomHex(std::size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string raw = SecureRandomBytes(n);
  std::string out;
  out.reserve(2 * n);
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace codeact::internal
