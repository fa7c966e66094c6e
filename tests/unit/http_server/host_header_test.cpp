// The Host check of the HTTP service (http_server/host_header.hpp): a loopback listener answers
// loopback literals and localhost whole, never a name that merely starts like one.
#include "http_server/host_header.hpp"

#include <gtest/gtest.h>

namespace codeact::internal {
namespace {

bool LoopbackAllows(const std::string& value) {
  const auto host = ParseHostHeader(value);
  return host && HostAllowed(*host, {}, /*loopback_listener=*/true);
}

TEST(HostHeaderTest, LoopbackListenerAnswersLoopbackLiteralsAndLocalhostOnly) {
  for (const char* ok : {"127.0.0.1", "127.0.0.1:8080", "127.255.3.4:1", "localhost",
                         "LOCALHOST:80", "[::1]", "[::1]:8080"}) {
    EXPECT_TRUE(LoopbackAllows(ok)) << ok;
  }
  // DNS names a rebinding page may use, and spellings that are not one dotted quad.
  for (const char* refused :
       {"127.0.0.1.attacker.example", "127.0.0.1.attacker.example:8080", "127.attacker.example",
        "127.0.0.1.", "127.1", "127.0.0.01", "127.0.0.256", "128.0.0.1", "localhost.",
        "localhost.attacker.example", "[::2]", "[::1].attacker.example", "0.0.0.0"}) {
    EXPECT_FALSE(LoopbackAllows(refused)) << refused;
  }
}

TEST(HostHeaderTest, AMalformedValueIsNoHost) {
  for (const char* bad : {"", ":80", "a b", "a:", "a:123456", "a:8x", "a:80:80", "[::1", "[]",
                          "[::1]80", "user@127.0.0.1", "127.0.0.1/x", "[::1]:"}) {
    EXPECT_FALSE(ParseHostHeader(bad).has_value()) << bad;
  }
  const auto h = ParseHostHeader("Example.COM:8443");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->name, "example.com");
  EXPECT_EQ(h->port, "8443");
}

TEST(HostHeaderTest, ConfiguredNamesReplaceTheDefaultAndMatchWhole) {
  const std::vector<std::string> allowed = {"api.example", "Other.Example:9000"};
  auto allows = [&](const char* value) {
    const auto host = ParseHostHeader(value);
    return host && HostAllowed(*host, allowed, /*loopback_listener=*/true);
  };
  EXPECT_TRUE(allows("api.example"));
  EXPECT_TRUE(allows("API.example:1234"));
  EXPECT_TRUE(allows("other.example:9000"));
  EXPECT_FALSE(allows("other.example:9001"));
  EXPECT_FALSE(allows("api.example.attacker.example"));
  EXPECT_FALSE(allows("127.0.0.1"));  // the list replaces the loopback names
  // A non-loopback listener without a list answers any well-formed name.
  EXPECT_TRUE(HostAllowed(*ParseHostHeader("anything.example"), {}, false));
}

}  // namespace
}  // namespace codeact::internal
