// The network-target grammar both backends share (common/egress_target.hpp): the URL each form
// becomes for the Hyperlight SDK, and the typos that must be refused rather than guessed at.
#include "common/egress_target.hpp"

#include <gtest/gtest.h>

namespace codeact::internal {
namespace {

EgressTarget Parsed(std::string_view text) {
  StatusOr<EgressTarget> t = ParseEgressTarget(text);
  EXPECT_TRUE(t.ok()) << text << ": " << t.status().ToString();
  return t.ok() ? *t : EgressTarget{};
}

std::string Error(std::string_view text) {
  StatusOr<EgressTarget> t = ParseEgressTarget(text);
  EXPECT_FALSE(t.ok()) << text << " was accepted as " << (t.ok() ? t->Display() : "");
  return t.ok() ? "" : t.status().message();
}

TEST(EgressTargetTest, ABareHostIsHttpsOnItsDefaultPort) {
  const EgressTarget t = Parsed("API.Example.com");
  EXPECT_EQ(t.scheme, "https");
  EXPECT_EQ(t.host, "api.example.com");
  EXPECT_EQ(t.port, 0);
  EXPECT_TRUE(t.methods.empty());
  EXPECT_EQ(t.Url(), "https://api.example.com");
  EXPECT_EQ(t.Display(), "https://api.example.com (any method)");
}

TEST(EgressTargetTest, SchemesPortsAndMethodsBecomeTheSdkUrl) {
  EXPECT_EQ(Parsed("http://127.0.0.1:8080").Url(), "http://127.0.0.1:8080");
  EXPECT_EQ(Parsed("HTTPS://x.org:8443/").Url(), "https://x.org:8443");
  // The default port is the same target as no port (the SDK's URL parser drops it too).
  EXPECT_EQ(Parsed("https://x.org:443").Url(), "https://x.org");
  EXPECT_EQ(Parsed("http://x.org:80").Url(), "http://x.org");
  EXPECT_EQ(Parsed("http://[::1]:9000").Url(), "http://[::1]:9000");
  const EgressTarget m = Parsed("api.example.com:get,POST,get");
  EXPECT_EQ(m.Url(), "https://api.example.com");
  EXPECT_EQ(m.methods, (std::vector<std::string>{"GET", "POST"}));
  EXPECT_EQ(m.Display(), "https://api.example.com (GET, POST)");
  const EgressTarget p = Parsed("http://localhost:8080:DELETE");
  EXPECT_EQ(p.Url(), "http://localhost:8080");
  EXPECT_EQ(p.methods, (std::vector<std::string>{"DELETE"}));
  EXPECT_EQ(Parsed("http://[::1]:HEAD").methods, (std::vector<std::string>{"HEAD"}));
}

TEST(EgressTargetTest, TyposAndUnsupportedFormsAreRefusedWithTheReason) {
  EXPECT_NE(Error("api.example.com:GTE").find("unknown HTTP method \"GTE\""), std::string::npos);
  EXPECT_NE(Error("x.org:GET,").find("an empty method"), std::string::npos);
  EXPECT_NE(Error("x.org:").find("empty method list"), std::string::npos);
  EXPECT_NE(Error("x.org:CONNECT").find("CONNECT is never allowed"), std::string::npos);
  EXPECT_NE(Error("x.org:trace").find("TRACE is never allowed"), std::string::npos);
  const std::string port = Error("x.org:8443");
  EXPECT_NE(port.find("https://x.org:8443 or http://x.org:8443"), std::string::npos) << port;
  EXPECT_NE(Error("ftp://x.org").find("https or http"), std::string::npos);
  EXPECT_NE(Error("https://x.org/api").find("path"), std::string::npos);
  EXPECT_NE(Error("https://user@x.org").find("user information"), std::string::npos);
  EXPECT_NE(Error("*.x.org").find("wildcards"), std::string::npos);
  EXPECT_NE(Error("https://x.org:0").find("1 to 65535"), std::string::npos);
  EXPECT_NE(Error("https://x.org:70000").find("1 to 65535"), std::string::npos);
  EXPECT_NE(Error("https://").find("no host"), std::string::npos);
  EXPECT_NE(Error("bad_-.org").find("not a valid host name"), std::string::npos);
  EXPECT_NE(Error("x..org").find("not a valid host name"), std::string::npos);
  EXPECT_NE(Error("x.org GET").find("white space"), std::string::npos);
  EXPECT_NE(Error("").find("empty"), std::string::npos);
  // Every error names the target and the grammar.
  const std::string e = Error("x.org:GTE");
  EXPECT_NE(e.find("network target \"x.org:GTE\""), std::string::npos) << e;
  EXPECT_NE(e.find("https://HOST[:PORT], http://HOST[:PORT] or HOST"), std::string::npos) << e;
}

TEST(EgressTargetTest, AListStopsAtItsFirstBadTarget) {
  auto ok = ParseEgressTargets({"a.com", "http://b.com:81:GET"});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[1].Display(), "http://b.com:81 (GET)");
  auto bad = ParseEgressTargets({"a.com", "b.com:PSOT"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("PSOT"), std::string::npos);
}

}  // namespace
}  // namespace codeact::internal
