// The host's side of the fork server against a zygote that breaks the protocol
// (fixtures/fork_server/fake_zygote.py): what it cannot decode ends the server with the reason.
// The real zygote is tested through the executor (tests/integration/warm_pool_test.cpp).
#include "process/fork_server.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace codeact::internal {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<ForkServer> StartFake(const std::string& reply) {
  LaunchSpec spec;
  spec.executable = "/usr/bin/python3.11";
  spec.args = {"-I", "-S", std::string(CODEACT_TEST_FIXTURES) + "/fork_server/fake_zygote.py"};
  spec.environment["FAKE_ZYGOTE_REPLY"] = reply;
  auto server = ForkServer::Start(spec, 30s);
  EXPECT_TRUE(server.ok()) << server.status().message();
  return server.ok() ? *server : nullptr;
}

TEST(ForkServerProtocolTest, AReplyThatIsNotAMessageEndsTheServerWithTheReason) {
  auto server = StartFake("P 123");  // the fork server's reply before its messages were typed
  ASSERT_NE(server, nullptr);
  const auto child = server->Fork(::testing::TempDir());
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(child.status().message(),
            "the fork server is broken: malformed fork server message: not JSON (syntax error)");
  EXPECT_FALSE(server->alive());
}

TEST(ForkServerProtocolTest, AMessageWithAMistypedFieldIsRefusedByName) {
  auto server = StartFake(R"({"type":"forked","pid":"123"})");
  ASSERT_NE(server, nullptr);
  const auto child = server->Fork(::testing::TempDir());
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().message(),
            "the fork server is broken: malformed fork server message: forked: \"pid\" must be an "
            "integer");
}

TEST(ForkServerProtocolTest, AFailedForkIsReportedWithTheZygotesReason) {
  auto server = StartFake(R"({"type":"fork_failed","message":"Resource temporarily unavailable"})");
  ASSERT_NE(server, nullptr);
  const auto child = server->Fork(::testing::TempDir());
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().message(),
            "the fork server could not fork: Resource temporarily unavailable");
  EXPECT_TRUE(server->alive());  // a well-formed answer: the server goes on
}

}  // namespace
}  // namespace codeact::internal
