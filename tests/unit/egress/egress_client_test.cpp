// The egress client (src/egress) against a local HTTP and HTTPS server of the test's own, under
// allow-listed names resolved by the client's test resolver hook, with the test's CA trusted
// through the client's test CA hook. Every refusal is asserted to have never reached the server.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>

#include "common/egress_target.hpp"
#include "egress/address_policy.hpp"
#include "egress/egress_tools.hpp"
#include "egress/http_client.hpp"
#include "testing/http_test_server.hpp"

namespace codeact::internal {
namespace {

using codeact::testing::HttpTestServer;
using codeact::testing::TestCertificates;

std::vector<EgressTarget> Targets(const std::vector<std::string>& texts) {
  auto parsed = ParseEgressTargets(texts);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return parsed.ok() ? *parsed : std::vector<EgressTarget>{};
}

// Every *.test name resolves to the loopback address (where the test's servers listen).
EgressResolver LoopbackResolver(std::atomic<int>* calls = nullptr) {
  return [calls](const std::string& host) -> StatusOr<std::vector<std::string>> {
    if (calls) ++*calls;
    if (host.size() > 5 && host.substr(host.size() - 5) == ".test") {
      return std::vector<std::string>{"127.0.0.1"};
    }
    return Unavailable("no such test host " + host);
  };
}

EgressClientOptions Options(const std::vector<std::string>& targets) {
  EgressClientOptions o;
  o.targets = Targets(targets);
  o.resolver_for_tests = LoopbackResolver();
  o.timeout_ms = 20'000;
  return o;
}

EgressRequest Get(const std::string& url) {
  EgressRequest r;
  r.url = url;
  return r;
}

std::string Http(const HttpTestServer& s, const std::string& host = "egress.test") {
  return "http://" + host + ":" + std::to_string(s.port());
}

TEST(EgressAddressPolicyTest, ClassifiesNonPublicAddressesOfBothFamilies) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"127.0.0.1", "loopback"},
      {"127.255.1.2", "loopback"},
      {"10.1.2.3", "private"},
      {"172.16.0.1", "private"},
      {"172.31.255.255", "private"},
      {"192.168.1.1", "private"},
      {"169.254.169.254", "link-local"},
      {"100.64.0.1", "carrier-grade NAT"},
      {"0.0.0.0", "unspecified"},
      {"224.0.0.1", "multicast"},
      {"255.255.255.255", "reserved"},
      {"::1", "loopback"},
      {"::", "unspecified"},
      {"fe80::1", "link-local"},
      {"fc00::1", "unique local"},
      {"fd12:3456::1", "unique local"},
      {"ff02::1", "multicast"},
      {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:10.0.0.1", "private"},
      {"::ffff:169.254.169.254", "link-local"},
      {"::127.0.0.1", "loopback"},
      {"64:ff9b::7f00:1", "loopback"},
      {"2002:7f00:1::", "loopback"},
  };
  for (const auto& [address, kind] : cases) {
    EXPECT_EQ(NonPublicAddressKind(address).value_or("public"), kind) << address;
  }
  for (const std::string public_address :
       {"8.8.8.8", "172.32.0.1", "203.0.113.7", "2606:4700::1111", "::ffff:8.8.8.8"}) {
    EXPECT_FALSE(NonPublicAddressKind(public_address).has_value()) << public_address;
  }
  EXPECT_EQ(NonPublicAddressKind("example.org").value_or(""), "not an IP address");
  EXPECT_EQ(CanonicalAddress("[::FFFF:127.0.0.1]").value_or(""), "::ffff:127.0.0.1");
}

TEST(EgressUrlTest, ParsesAbsoluteHttpUrlsOnly) {
  auto u = ParseEgressUrl("HTTPS://API.Example.org:8443/a/b?c=d#frag");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "api.example.org");
  EXPECT_EQ(u->port, 8443);
  EXPECT_EQ(u->target, "/a/b?c=d");
  auto d = ParseEgressUrl("http://example.org:80?q=1");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->port, 0);
  EXPECT_EQ(d->target, "/?q=1");
  auto v6 = ParseEgressUrl("http://[::1]:8080/x");
  ASSERT_TRUE(v6.ok()) << v6.status().ToString();
  EXPECT_EQ(v6->host, "[::1]");
  for (const std::string bad :
       {"ftp://x.org/", "x.org/a", "http://user@x.org/", "http://x.org:GET/", "http://x.org:99999/",
        "http://x y.org/", "http:///a"}) {
    EXPECT_FALSE(ParseEgressUrl(bad).ok()) << bad;
  }
}

class EgressClientTest : public ::testing::Test {
 protected:
  HttpTestServer server_;
};

TEST_F(EgressClientTest, AllowedGetAndPost) {
  // The name resolves to loopback: the address is listed too, so it may be reached.
  EgressClient client(
      Options({Http(server_), "http://127.0.0.1:" + std::to_string(server_.port())}));
  auto got = client.Fetch(Get(Http(server_) + "/hello"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, "hello");
  EgressRequest post = Get(Http(server_) + "/echo");
  post.method = "POST";
  post.body = "{\"a\":1}";
  post.has_body = true;
  post.headers = {{"X-Test", "yes"}, {"Content-Type", "application/json"}};
  auto posted = client.Fetch(post);
  ASSERT_TRUE(posted.ok()) << posted.status().ToString();
  EXPECT_EQ(posted->body, "POST {\"a\":1} x-test=yes type=application/json");
}

TEST_F(EgressClientTest, ListedAddressIsReachedDirectly) {
  const std::string url = "http://127.0.0.1:" + std::to_string(server_.port());
  EgressClientOptions options = Options({url});
  options.resolver_for_tests = nullptr;  // an address needs no lookup
  EgressClient client(std::move(options));
  auto got = client.Fetch(Get(url + "/hello"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->body, "hello");
}

TEST_F(EgressClientTest, MethodNotListedIsRefusedBeforeConnecting) {
  EgressClient client(Options({Http(server_) + ":GET", "127.0.0.1"}));
  EgressRequest post = Get(Http(server_) + "/echo");
  post.method = "POST";
  auto r = client.Fetch(post);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("the method POST is not allowed for " + Http(server_)),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(server_.connections(), 0);
}

TEST_F(EgressClientTest, UnlistedHostPortOrSchemeIsRefused) {
  EgressClient client(Options({Http(server_), "127.0.0.1"}));
  for (const std::string& url :
       std::vector<std::string>{Http(server_, "other.test") + "/hello",
                                "https://egress.test:" + std::to_string(server_.port()) + "/hello",
                                "http://egress.test:1/hello"}) {
    auto r = client.Fetch(Get(url));
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << url;
    EXPECT_NE(r.status().message().find("is not a listed network target"), std::string::npos)
        << r.status().message();
  }
  EXPECT_EQ(server_.connections(), 0);
}

TEST_F(EgressClientTest, LoopbackAddressOfAListedNameIsRefusedUnlessTheAddressIsListed) {
  EgressClient client(Options({Http(server_)}));
  auto r = client.Fetch(Get(Http(server_) + "/hello"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("127.0.0.1 (loopback)"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(server_.connections(), 0);

  // Private and link-local answers are refused the same way, in both families.
  for (const std::string address :
       {"10.0.0.5", "169.254.169.254", "::1", "::ffff:127.0.0.1", "fe80::1", "192.168.0.10"}) {
    EgressClientOptions o = Options({Http(server_)});
    o.resolver_for_tests = [address](const std::string&) -> StatusOr<std::vector<std::string>> {
      return std::vector<std::string>{address};
    };
    auto refused = EgressClient(std::move(o)).Fetch(Get(Http(server_) + "/hello"));
    ASSERT_FALSE(refused.ok()) << address;
    EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied) << address;
    EXPECT_NE(refused.status().message().find("resolves only to addresses that are refused"),
              std::string::npos)
        << refused.status().message();
  }
}

TEST_F(EgressClientTest, RedirectToAListedTargetIsFollowed) {
  EgressClient client(Options({Http(server_), Http(server_, "second.test"), "127.0.0.1"}));
  auto r =
      client.Fetch(Get(Http(server_) + "/redirect?to=" + Http(server_, "second.test") + "/hello"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->final_url, Http(server_, "second.test") + "/hello");
  // A relative Location stays on the same origin; 303 turns a POST into a GET.
  EgressRequest post = Get(Http(server_) + "/redirect303?to=/echo");
  post.method = "POST";
  post.body = "dropped";
  post.has_body = true;
  auto see_other = client.Fetch(post);
  ASSERT_TRUE(see_other.ok()) << see_other.status().ToString();
  EXPECT_EQ(see_other->body, "GET ");
}

// A key meant for one listed service must not follow a redirect to another listed origin: the
// custom credential headers (default X-Api-Key, Proxy-Authorization) go the way Authorization
// and Cookie go; on the same origin they stay.
TEST_F(EgressClientTest, CredentialHeadersAreDroppedOnARedirectToAnotherOrigin) {
  auto with_keys = [](const std::string& url) {
    EgressRequest r = Get(url);
    r.headers = {{"Authorization", "Bearer a"}, {"X-Api-Key", "secret-key"}, {"X-Other-Key", "o"}};
    return r;
  };
  EgressClient client(Options({Http(server_), Http(server_, "second.test"), "127.0.0.1"}));
  auto same = client.Fetch(with_keys(Http(server_) + "/redirect?to=/echo"));
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(same->body, "GET  Authorization=Bearer a X-Api-Key=secret-key X-Other-Key=o");
  auto other = client.Fetch(
      with_keys(Http(server_) + "/redirect?to=" + Http(server_, "second.test") + "/echo"));
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(other->body, "GET  X-Other-Key=o") << "a credential followed the redirect";

  // The list is configurable: naming X-Other-Key drops it too.
  EgressClientOptions o = Options({Http(server_), Http(server_, "second.test"), "127.0.0.1"});
  o.cross_origin_strip_headers.push_back("x-other-key");
  auto custom = EgressClient(std::move(o))
                    .Fetch(with_keys(Http(server_) +
                                     "/redirect?to=" + Http(server_, "second.test") + "/echo"));
  ASSERT_TRUE(custom.ok()) << custom.status().ToString();
  EXPECT_EQ(custom->body, "GET ");
}

TEST_F(EgressClientTest, RedirectToAnUnlistedTargetIsRefused) {
  EgressClient client(Options({Http(server_), "127.0.0.1"}));
  auto r =
      client.Fetch(Get(Http(server_) + "/redirect?to=" + Http(server_, "evil.test") + "/hello"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("redirect refused: " + Http(server_, "evil.test") +
                                      " is not a listed network target"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(server_.connections(), 1);  // the first hop only
  // A redirect to an address that is not listed (cloud metadata, say) is refused too.
  auto metadata = client.Fetch(Get(Http(server_) + "/redirect?to=http://169.254.169.254/latest"));
  ASSERT_FALSE(metadata.ok());
  EXPECT_EQ(metadata.status().code(), StatusCode::kPermissionDenied);
}

TEST_F(EgressClientTest, RedirectLoopEndsAtTheHopCap) {
  EgressClientOptions o = Options({Http(server_), "127.0.0.1"});
  o.max_redirects = 3;
  EgressClient client(std::move(o));
  auto r = client.Fetch(
      Get(Http(server_) + "/redirect?to=/redirect?to=/redirect?to=/redirect?to=/hello"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("more than 3 redirects"), std::string::npos)
      << r.status().message();
}

TEST_F(EgressClientTest, ResponseOverTheCapFails) {
  EgressClientOptions o = Options({Http(server_), "127.0.0.1"});
  o.max_response_bytes = 1000;
  EgressClient client(std::move(o));
  auto small = client.Fetch(Get(Http(server_) + "/big?n=1000"));
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->body.size(), 1000u);
  auto big = client.Fetch(Get(Http(server_) + "/big?n=5000"));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("exceeds the cap of 1000 bytes"), std::string::npos)
      << big.status().message();
  // A tighter cap for one call (the run's frame size) wins.
  EgressRequest tight = Get(Http(server_) + "/big?n=600");
  tight.max_response_bytes = 500;
  EXPECT_EQ(client.Fetch(tight).status().code(), StatusCode::kResourceExhausted);
}

TEST_F(EgressClientTest, SlowServerTimesOut) {
  EgressClientOptions o = Options({Http(server_), "127.0.0.1"});
  o.timeout_ms = 300;
  EgressClient client(std::move(o));
  const auto start = std::chrono::steady_clock::now();
  auto r = client.Fetch(Get(Http(server_) + "/slow"));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST_F(EgressClientTest, CancellationEndsAWaitingRequest) {
  EgressClient client(Options({Http(server_), "127.0.0.1"}));
  CancellationSource source;
  std::thread canceller([&] {
    // Cancel once the request is waiting at the server (it has connected).
    while (server_.connections() == 0) std::this_thread::yield();
    source.Cancel("the run ended");
  });
  auto r = client.Fetch(Get(Http(server_) + "/slow"), source.token());
  canceller.join();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the run ended"), std::string::npos) << r.status().ToString();
}

TEST_F(EgressClientTest, HeadersTheClientOwnsAreRefused) {
  EgressClient client(Options({Http(server_), "127.0.0.1"}));
  for (const auto& header :
       std::vector<std::pair<std::string, std::string>>{{"Host", "evil.test"},
                                                        {"Transfer-Encoding", "chunked"},
                                                        {"X-A", "a\r\nHost: b"},
                                                        {"Bad Name", "x"}}) {
    EgressRequest r = Get(Http(server_) + "/hello");
    r.headers = {header};
    auto refused = client.Fetch(r);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << header.first;
  }
  EgressRequest trace = Get(Http(server_) + "/hello");
  trace.method = "TRACE";
  EXPECT_EQ(client.Fetch(trace).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server_.connections(), 0);
}

// DNS pinning: the resolver answers a public address first and loopback second; the loopback
// answer is dropped at the check, and the connection goes to the checked address only (which
// does not answer here), never to the test server on loopback. One lookup per hop.
TEST_F(EgressClientTest, ConnectsOnlyToTheAddressItChecked) {
  std::atomic<int> lookups{0};
  EgressClientOptions o = Options({Http(server_)});
  o.timeout_ms = 1500;
  o.resolver_for_tests = [&lookups](const std::string&) -> StatusOr<std::vector<std::string>> {
    // A rebinding resolver: a public address first, loopback on every later answer.
    if (lookups++ == 0) return std::vector<std::string>{"203.0.113.7", "127.0.0.1"};
    return std::vector<std::string>{"127.0.0.1"};
  };
  EgressClient client(std::move(o));
  auto r = client.Fetch(Get(Http(server_) + "/hello"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().code() == StatusCode::kUnavailable ||
              r.status().code() == StatusCode::kDeadlineExceeded)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("203.0.113.7"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("127.0.0.1"), std::string::npos) << r.status().message();
  EXPECT_EQ(lookups.load(), 1);
  EXPECT_EQ(server_.connections(), 0);
}

class EgressTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = TestCertificates::Make("egress.test");
    if (!certs_.ok) GTEST_SKIP() << "the openssl CLI could not make test certificates";
    server_ = std::make_unique<HttpTestServer>(&certs_);
  }
  std::string Https(const std::string& host = "egress.test") {
    return "https://" + host + ":" + std::to_string(server_->port());
  }
  EgressClientOptions TlsOptions(bool trust_test_ca) {
    EgressClientOptions o = Options({Https(), Https("other.test"), "127.0.0.1"});
    if (trust_test_ca) o.extra_ca_pem_for_tests = certs_.ca_pem;
    return o;
  }
  TestCertificates certs_;
  std::unique_ptr<HttpTestServer> server_;
};

TEST_F(EgressTlsTest, VerifiedCertificateAndNameSucceed) {
  EgressClient client(TlsOptions(true));
  auto r = client.Fetch(Get(Https() + "/hello"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
}

TEST_F(EgressTlsTest, UntrustedCertificateIsRefused) {
  EgressClient client(TlsOptions(false));  // the system store does not know the test CA
  auto r = client.Fetch(Get(Https() + "/hello"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("TLS handshake"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("certificate verify failed"), std::string::npos)
      << r.status().message();
}

TEST_F(EgressTlsTest, CertificateForAnotherNameIsRefused) {
  EgressClient client(TlsOptions(true));
  auto r = client.Fetch(Get(Https("other.test") + "/hello"));  // the certificate is egress.test's
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("certificate verify failed"), std::string::npos)
      << r.status().message();
}

TEST_F(EgressClientTest, ToolsReturnTheGuestsShapeAndRefuseAsHttpError) {
  EgressClientOptions o = Options({Http(server_) + ":GET,POST", "127.0.0.1"});
  auto tools = MakeEgressTools(std::make_shared<const EgressClient>(std::move(o)));
  ASSERT_EQ(tools.size(), 3u);
  EXPECT_EQ(tools[0].name, "http_get");
  EXPECT_EQ(tools[1].name, "http_post");
  EXPECT_EQ(tools[2].name, "http_request");
  const ToolCallContext context;
  ToolResult got = tools[0].cancellable_handler(
      boost::json::serialize(boost::json::object{{"url", Http(server_) + "/hello"}}), context);
  ASSERT_TRUE(got.ok) << got.message;
  EXPECT_EQ(boost::json::parse(got.result_json),
            boost::json::parse(R"({"status":200,"body":"hello"})"));
  ToolResult posted = tools[1].cancellable_handler(
      boost::json::serialize(boost::json::object{{"url", Http(server_) + "/echo"}, {"body", "b"}}),
      context);
  ASSERT_TRUE(posted.ok) << posted.message;
  EXPECT_EQ(boost::json::parse(posted.result_json).at("body"), "POST b type=application/json");
  ToolResult refused =
      tools[2].cancellable_handler(boost::json::serialize(boost::json::object{
                                       {"method", "DELETE"}, {"url", Http(server_) + "/echo"}}),
                                   context);
  ASSERT_FALSE(refused.ok);
  EXPECT_EQ(refused.error_type, "HttpError");
  EXPECT_NE(refused.message.find("the method DELETE is not allowed"), std::string::npos)
      << refused.message;
  ToolResult not_found = tools[0].cancellable_handler(
      boost::json::serialize(boost::json::object{{"url", Http(server_) + "/nothing"}}), context);
  ASSERT_TRUE(not_found.ok);  // an HTTP status is a result, not an error
  EXPECT_EQ(boost::json::parse(not_found.result_json).at("status"), 404);
}

}  // namespace
}  // namespace codeact::internal
