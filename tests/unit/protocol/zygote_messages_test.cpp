// The zygote's side of the fork server messages (protocol/zygote_messages.hpp) against the host's
// (protocol/fork_messages.hpp): what one side writes the other reads, and what is malformed is
// refused by name. And flat_json.hpp, the reader both the zygote and the launcher use.
#include "protocol/zygote_messages.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <variant>

#include "protocol/flat_json.hpp"
#include "protocol/fork_messages.hpp"

namespace codeact::internal {
namespace {

using protocol::DecodeHostMessage;
using protocol::ForkRequest;
using protocol::HostMessage;

HostMessage MustDecode(const std::string& datagram) {
  std::string error;
  const auto m = DecodeHostMessage(datagram, error);
  EXPECT_TRUE(m.has_value()) << error;
  return m.value_or(HostMessage{});
}

std::string RefusalOf(const std::string& datagram) {
  std::string error;
  const auto m = DecodeHostMessage(datagram, error);
  EXPECT_FALSE(m.has_value()) << datagram;
  return error;
}

TEST(ZygoteMessagesTest, TheZygoteReadsTheHostsForkAsWritten) {
  const ForkRequest sent{"0123456789abcdef0123456789abcdef", 1879048197, 1 << 20,
                         "/tmp/codeact-\xc3\xa9 \"q\"\\\n",  4 << 20,    4};
  const HostMessage m = MustDecode(protocol::EncodeFork(sent));
  ASSERT_FALSE(m.kill);
  EXPECT_EQ(m.fork.token, sent.token);
  EXPECT_EQ(m.fork.uid, sent.uid);
  EXPECT_EQ(m.fork.workdir_bytes, sent.workdir_bytes);
  EXPECT_EQ(m.fork.workdir, sent.workdir);
  EXPECT_EQ(m.fork.tmp_bytes, sent.tmp_bytes);
  EXPECT_EQ(m.fork.cgroup_fds, sent.cgroup_fds);

  // A process-level fork has neither tmp_bytes nor cgroup_fds: both 0.
  const HostMessage plain = MustDecode(protocol::EncodeFork({"tok", -1, 0, "/w", 0, 0}));
  EXPECT_EQ(plain.fork.uid, -1);
  EXPECT_EQ(plain.fork.tmp_bytes, 0);
  EXPECT_EQ(plain.fork.cgroup_fds, 0);
}

TEST(ZygoteMessagesTest, TheZygoteReadsAKill) {
  const HostMessage m = MustDecode(protocol::EncodeKill(4242));
  EXPECT_TRUE(m.kill);
  EXPECT_EQ(m.pid, 4242);
  EXPECT_EQ(RefusalOf(R"({"type":"kill","pid":0})"),
            "malformed fork server message: kill: \"pid\" must be positive");
}

TEST(ZygoteMessagesTest, WhatTheHostMustNotSendIsRefusedByName) {
  const std::string prefix = "malformed fork server message: ";
  EXPECT_EQ(RefusalOf("F tok -1 0 /w"), prefix + "not a JSON object");
  EXPECT_EQ(RefusalOf(R"({"type":"forked","pid":1})"), prefix + "unknown type \"forked\"");
  EXPECT_EQ(RefusalOf(R"({"type":"exec","pid":1})"), prefix + "unknown type \"exec\"");
  EXPECT_EQ(RefusalOf(R"({"pid":1})"), prefix + "\"type\" must be a string");
  EXPECT_EQ(RefusalOf(R"({"type":"fork","token":"t","uid":"0","workdir_bytes":0,"workdir":"/w"})"),
            prefix + "fork: \"uid\" must be an integer");
  EXPECT_EQ(RefusalOf(R"({"type":"fork","uid":0,"workdir_bytes":0,"workdir":"/w"})"),
            prefix + "fork: \"token\" is missing");
  EXPECT_EQ(
      RefusalOf(R"({"type":"fork","token":"\u00e9","uid":0,"workdir_bytes":0,"workdir":"/w"})"),
      prefix + "fork needs an ASCII \"token\" and a \"workdir\" string");
  EXPECT_EQ(RefusalOf(R"({"type":"fork","token":"t","uid":7,"workdir_bytes":5,"workdir":"/w",)"
                      R"("tmp_bytes":6,"cgroup_fds":9})"),
            prefix + "fork: \"cgroup_fds\" out of range");
  EXPECT_EQ(RefusalOf(R"({"type":"kill","pid":1,"pid":2})"), prefix + "\"pid\" twice");
  EXPECT_EQ(RefusalOf(R"({"type":"kill","pid":1.5})"),
            prefix + "\"pid\" must be a string or an integer");
  EXPECT_EQ(RefusalOf(R"({"type":"kill","pid":{"n":1}})"),
            prefix + "\"pid\" must be a string or an integer");
  EXPECT_EQ(RefusalOf(R"({"type":"kill","pid":1} x)"), prefix + "text after the object");
}

TEST(ZygoteMessagesTest, TheHostReadsWhatTheZygoteWrites) {
  auto ready = protocol::DecodeZygoteMessage(protocol::EncodeZygoteReady(17));
  ASSERT_TRUE(ready.ok()) << ready.status().message();
  EXPECT_EQ(std::get<protocol::ZygoteReady>(*ready).pid, 17);

  auto forked = protocol::DecodeZygoteMessage(protocol::EncodeForked(18));
  ASSERT_TRUE(forked.ok()) << forked.status().message();
  EXPECT_EQ(std::get<protocol::Forked>(*forked).pid, 18);

  auto exited = protocol::DecodeZygoteMessage(protocol::EncodeExited(19, 256, 1500));
  ASSERT_TRUE(exited.ok()) << exited.status().message();
  const auto& e = std::get<protocol::Exited>(*exited);
  EXPECT_EQ(e.pid, 19);
  EXPECT_EQ(e.status, 256);
  EXPECT_EQ(e.cpu_us, 1500);

  // A reason with quotes, a control character and a byte that is not UTF-8 stays valid JSON.
  auto failed = protocol::DecodeZygoteMessage(protocol::EncodeForkFailed("a \"b\"\n\xff"));
  ASSERT_TRUE(failed.ok()) << failed.status().message();
  EXPECT_EQ(std::get<protocol::ForkFailed>(*failed).message, "a \"b\"\n\xc3\xbf");
}

TEST(FlatJsonTest, StringsAreDecodedWithEveryEscape) {
  std::string error;
  const auto fields = ParseFlatJsonObject(
      R"( { "s" : "a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "n" : -9223372036854775808 } )", error);
  ASSERT_TRUE(fields.has_value()) << error;
  ASSERT_EQ(fields->size(), 2u);
  EXPECT_EQ(std::get<std::string>((*fields)[0].value), "a\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(std::get<std::int64_t>((*fields)[1].value), std::numeric_limits<std::int64_t>::min());
  EXPECT_TRUE(ParseFlatJsonObject("{}", error).has_value());
}

TEST(FlatJsonTest, WhatIsNotAFlatObjectIsRefused) {
  for (const char* text :
       {"", "[]", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":01}", "{\"a\":-}",
        "{\"a\":9223372036854775808}", "{\"a\":1e3}", "{\"a\":true}", "{\"a\":null}",
        "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\x01\"}",
        "{\"a\":\"open", "{a:1}", "{\"a\":1}{"}) {
    std::string error;
    EXPECT_FALSE(ParseFlatJsonObject(text, error).has_value()) << text;
    EXPECT_FALSE(error.empty()) << text;
  }
}

TEST(FlatJsonTest, StringLiteralsAreAscii) {
  EXPECT_EQ(JsonStringLiteral("a\"b\\c\n\x7f\xc3\xa9"), R"("a\"b\\c\u000a\u007f\u00c3\u00a9")");
}

}  // namespace
}  // namespace codeact::internal
