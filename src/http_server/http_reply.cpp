// Reply helpers (http_reply.hpp).
#include "http_server/http_reply.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "common/ascii.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {

namespace http = boost::beast::http;
namespace json = boost::json;

Reply JsonReply(http::status status, const json::object& body, std::string outcome) {
  Reply r;
  r.status = status;
  r.body = SerializeJson(body);
  r.outcome = std::move(outcome);
  return r;
}

Reply ErrorReply(http::status status, std::string_view reason, const std::string& message) {
  Reply r = JsonReply(status, json::object{{"error", message}, {"code", reason}}, "");
  r.outcome = std::string(reason);
  return r;
}

Reply MethodNotAllowed(const std::string& allow) {
  Reply r = ErrorReply(http::status::method_not_allowed, "method_not_allowed",
                       "method not allowed; this route takes " + allow);
  r.headers.emplace_back("Allow", allow);
  return r;
}

std::string RandomHex(std::size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  std::size_t got = 0;
  while (got < raw.size()) {
    const ssize_t n = ::getrandom(raw.data() + got, raw.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The kernel's generator failing is a broken host; never hand out a predictable id.
      std::fprintf(stderr, "codeact serve: getrandom failed\n");
      std::abort();
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

std::string MediaType(std::string_view value) {
  const std::size_t semi = value.find(';');
  std::string_view type = value.substr(0, semi);
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  while (!type.empty() && type.front() == ' ') type.remove_prefix(1);
  return AsciiLower(type);
}

std::optional<std::string> QueryValue(std::string_view query, std::string_view key) {
  std::optional<std::string> value;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      value = eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return value;
}

}  // namespace codeact::internal
