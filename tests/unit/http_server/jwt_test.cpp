// JWT verification (http_server/jwt.hpp) and the bearer-token authenticator
// (http_server/auth.hpp): HS256 only, exp required, skew, aud, the token id; token files.
#include "http_server/jwt.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "http_server/auth.hpp"

namespace codeact::internal {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

constexpr std::int64_t kNow = 1'800'000'000;
const std::string kSecret = "unit-test-secret-0123456789";

std::string Token(const std::string& header, const std::string& claims,
                  const std::string& secret = kSecret) {
  const std::string input = Base64UrlEncode(header) + "." + Base64UrlEncode(claims);
  return input + "." + Base64UrlEncode(HmacSha256(secret, input));
}

std::string Claims(bj::object o) { return bj::serialize(o); }

JwtSettings Settings(std::optional<std::string> audience = std::nullopt) {
  JwtSettings s;
  s.secret = kSecret;
  s.audience = std::move(audience);
  return s;
}

const std::string kHs256 = R"({"alg":"HS256","typ":"JWT"})";

TEST(Base64UrlTest, RoundTripsAndRejectsBadText) {
  for (std::string bytes : {"", "f", "fo", "foo", "foob", "\xff\xfe\x00?"}) {
    auto back = Base64UrlDecode(Base64UrlEncode(bytes));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, bytes);
  }
  EXPECT_EQ(Base64UrlEncode("\xfb\xff"), "-_8");
  EXPECT_FALSE(Base64UrlDecode("ab+c").has_value()) << "standard base64's '+' is not base64url";
  EXPECT_FALSE(Base64UrlDecode("abc=").has_value()) << "no padding in JWS";
  EXPECT_FALSE(Base64UrlDecode("a").has_value());
}

TEST(HmacTest, MatchesRfc4231Case2) {
  const std::string mac = HmacSha256("Jefe", "what do ya want for nothing?");
  std::string hex;
  for (unsigned char c : mac) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", c);
    hex += two;
  }
  EXPECT_EQ(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(JwtTest, AcceptsAGoodTokenAndNamesItByJtiThenSub) {
  auto id = VerifyJwt(Token(kHs256, Claims({{"sub", "alice"}, {"jti", "t1"}, {"exp", kNow + 60}})),
                      Settings(), kNow);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->token_id, "jti:t1");
  EXPECT_EQ(id->owner, "sub:alice");
  auto sub_only =
      VerifyJwt(Token(kHs256, Claims({{"sub", "bob"}, {"exp", kNow + 60}})), Settings(), kNow);
  ASSERT_TRUE(sub_only.ok());
  EXPECT_EQ(sub_only->token_id, "sub:bob");
  auto nameless = VerifyJwt(Token(kHs256, Claims({{"exp", kNow + 60}})), Settings(), kNow);
  EXPECT_FALSE(nameless.ok());
}

TEST(JwtTest, ExpIsRequiredWithSixtySecondsOfSkew) {
  auto missing = VerifyJwt(Token(kHs256, Claims({{"sub", "a"}})), Settings(), kNow);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "invalid JWT: \"exp\" is required (a NumericDate)");
  EXPECT_TRUE(
      VerifyJwt(Token(kHs256, Claims({{"sub", "a"}, {"exp", kNow - 59}})), Settings(), kNow).ok());
  auto expired =
      VerifyJwt(Token(kHs256, Claims({{"sub", "a"}, {"exp", kNow - 61}})), Settings(), kNow);
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.status().message(), "invalid JWT: expired");
  EXPECT_EQ(expired.status().code(), StatusCode::kPermissionDenied);
  auto text_exp =
      VerifyJwt(Token(kHs256, Claims({{"sub", "a"}, {"exp", "tomorrow"}})), Settings(), kNow);
  EXPECT_FALSE(text_exp.ok());
  auto early =
      VerifyJwt(Token(kHs256, Claims({{"sub", "a"}, {"exp", kNow + 600}, {"nbf", kNow + 120}})),
                Settings(), kNow);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().message(), "invalid JWT: not valid yet (nbf)");
}

TEST(JwtTest, OnlyHs256) {
  const std::string claims = Claims({{"sub", "a"}, {"exp", kNow + 60}});
  for (const std::string alg : {"none", "HS512", "HS384", "RS256", "ES256", "hs256"}) {
    auto r = VerifyJwt(Token(R"({"alg":")" + alg + R"("})", claims), Settings(), kNow);
    ASSERT_FALSE(r.ok()) << alg;
    EXPECT_NE(r.status().message().find("\"" + alg + "\" refused"), std::string::npos)
        << r.status().message();
  }
  // alg none with an empty signature, the classic forgery.
  const std::string none =
      Base64UrlEncode(R"({"alg":"none"})") + "." + Base64UrlEncode(claims) + ".";
  EXPECT_FALSE(VerifyJwt(none, Settings(), kNow).ok());
  EXPECT_FALSE(VerifyJwt(Token(R"({"typ":"JWT"})", claims), Settings(), kNow).ok());
  EXPECT_FALSE(
      VerifyJwt(Token(R"({"alg":"HS256","crit":["exp"]})", claims), Settings(), kNow).ok());
}

TEST(JwtTest, SignatureAndShape) {
  const std::string claims = Claims({{"sub", "a"}, {"exp", kNow + 60}});
  auto wrong = VerifyJwt(Token(kHs256, claims, "another-secret-0123456789"), Settings(), kNow);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "invalid JWT: bad signature");
  // A payload changed after signing.
  std::string token = Token(kHs256, claims);
  const std::size_t dot1 = token.find('.');
  const std::size_t dot2 = token.find('.', dot1 + 1);
  const std::string forged = token.substr(0, dot1 + 1) +
                             Base64UrlEncode(Claims({{"sub", "root"}, {"exp", kNow + 60}})) +
                             token.substr(dot2);
  EXPECT_FALSE(VerifyJwt(forged, Settings(), kNow).ok());
  EXPECT_FALSE(VerifyJwt("a.b", Settings(), kNow).ok());
  EXPECT_FALSE(VerifyJwt("a.b.c.d", Settings(), kNow).ok());
  EXPECT_FALSE(VerifyJwt("!!.!!.!!", Settings(), kNow).ok());
}

TEST(JwtTest, AudienceWhenConfigured) {
  const auto with_aud = [](bj::value aud) {
    bj::object o{{"sub", "a"}, {"exp", kNow + 60}};
    if (!aud.is_null()) o["aud"] = aud;
    return Token(kHs256, Claims(o));
  };
  EXPECT_TRUE(VerifyJwt(with_aud("svc"), Settings("svc"), kNow).ok());
  EXPECT_TRUE(VerifyJwt(with_aud(bj::array{"x", "svc"}), Settings("svc"), kNow).ok());
  EXPECT_FALSE(VerifyJwt(with_aud("other"), Settings("svc"), kNow).ok());
  EXPECT_FALSE(VerifyJwt(with_aud(nullptr), Settings("svc"), kNow).ok());
  EXPECT_TRUE(VerifyJwt(with_aud("other"), Settings(), kNow).ok()) << "not configured: not checked";
}

class TokenFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("tokens-" + std::to_string(::getpid()));
  }
  void TearDown() override { fs::remove(path_); }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  fs::path path_;
};

TEST_F(TokenFileTest, ReadsTokensByLineAndAuthenticatesThem) {
  Write("# comment\nfirst-token-abc\n\n  second-token-xyz  \n");
  auto tokens = Authenticator::ReadTokenFile(path_.string());
  ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
  Authenticator auth;
  auth.SetTokens(*tokens);
  ASSERT_TRUE(auth.enabled());
  auto first = auth.Authenticate("Bearer first-token-abc", kNow);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->token_id, "line:2");
  auto second = auth.Authenticate("bearer second-token-xyz", kNow);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->token_id, "line:4");
  EXPECT_EQ(auth.Authenticate("Bearer first-token-ab", kNow).status().message(),
            "unknown bearer token");
  EXPECT_EQ(auth.Authenticate("", kNow).status().message(), "missing bearer token");
  EXPECT_FALSE(auth.Authenticate("Basic first-token-abc", kNow).ok());
  EXPECT_FALSE(auth.Authenticate("Bearer # comment", kNow).ok());
  EXPECT_FALSE(auth.Authenticate("Bearer ", kNow).ok());
}

TEST_F(TokenFileTest, RefusesShortTokensEmptyFilesAndNeverEchoesATokenInErrors) {
  Write("short\n");
  auto shortened = Authenticator::ReadTokenFile(path_.string());
  ASSERT_FALSE(shortened.ok());
  EXPECT_NE(shortened.status().message().find("line 1"), std::string::npos);
  EXPECT_EQ(shortened.status().message().find("short\n"), std::string::npos);
  Write("# nothing\n\n");
  EXPECT_FALSE(Authenticator::ReadTokenFile(path_.string()).ok());
  Write("has a-space-inside-it\n");
  EXPECT_FALSE(Authenticator::ReadTokenFile(path_.string()).ok());
  EXPECT_FALSE(Authenticator::ReadTokenFile("/nonexistent/file").ok());
}

TEST_F(TokenFileTest, SecretFileAndJwtThroughTheAuthenticator) {
  Write(kSecret + "\n");
  auto secret = Authenticator::ReadSecretFile(path_.string());
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ(*secret, kSecret);
  Authenticator auth;
  auth.SetJwt(Settings());
  auto id = auth.Authenticate(
      "Bearer " + Token(kHs256, Claims({{"jti", "j9"}, {"exp", kNow + 60}})), kNow);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->token_id, "jti:j9");
  Write("too-short\n");
  EXPECT_FALSE(Authenticator::ReadSecretFile(path_.string()).ok());
}

TEST(AuthenticatorTest, WithoutCredentialsEveryoneIsAnonymous) {
  Authenticator auth;
  EXPECT_FALSE(auth.enabled());
  auto id = auth.Authenticate("", kNow);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->token_id, "anonymous");
}

}  // namespace
}  // namespace codeact::internal
