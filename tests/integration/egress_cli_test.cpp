// Egress at the local backend end to end: `codeact run --allow-domain ...` with code that awaits
// http_get / http_post / http_request, against a local HTTP server of the test's own, whose
// loopback address is the listed target (a listed address may be reached; docs/network.md).
// Also: the tools are absent without targets, and the validator's hint for a network module
// follows the targets.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "testing/cli_support.hpp"
#include "testing/http_test_server.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
using testing::HttpTestServer;
using testing::RunCli;

class EgressCliTest : public ::testing::Test {
 protected:
  std::string Origin() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
  bj::value Run(const std::vector<std::string>& flags, const std::string& code, int want_exit) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("-");
    const testing::ProgramRun c = RunCli(args, code);
    EXPECT_EQ(c.exit_code, want_exit) << c.out << c.err;
    bj::error_code ec;
    bj::value v = bj::parse(c.out, ec);
    EXPECT_FALSE(ec) << c.out << c.err;
    return v;
  }
  HttpTestServer server_;
};

TEST_F(EgressCliTest, CodeReachesAListedTargetThroughTheHostTools) {
  const std::string code = "r = await http_get('" + Origin() +
                           "/hello')\n"
                           "p = await http_post('" +
                           Origin() +
                           "/echo', '{\"n\": 1}')\n"
                           "q = await http_request('PUT', '" +
                           Origin() +
                           "/echo', headers={'X-Test': 't'}, body='b')\n"
                           "print(r['status'], r['body'])\n"
                           "print(p['body'])\n"
                           "print(q['body'])\n";
  const bj::value v = Run({"--allow-domain", Origin()}, code, 0);
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.at("outcome").as_string(), "ok") << v;
  EXPECT_EQ(v.at("stdout").as_string(),
            "200 hello\nPOST {\"n\": 1} type=application/json\nPUT b x-test=t\n");
}

TEST_F(EgressCliTest, RefusedRequestsRaiseToolErrorInTheCode) {
  const std::string code =
      "for url in ['http://example.test/', '" + Origin() +
      "/redirect?to=http://evil.test/x']:\n"
      "    try:\n"
      "        await http_get(url)\n"
      "    except ToolError as e:\n"
      "        print(e.error_type, 'not a listed network target' in e.message)\n"
      "try:\n"
      "    await http_post('" +
      Origin() +
      "/echo', 'x')\n"
      "except ToolError as e:\n"
      "    print(e.error_type, 'the method POST is not allowed' in e.message)\n";
  const bj::value v = Run({"--allow-domain", Origin() + ":GET"}, code, 0);
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.at("stdout").as_string(), "HttpError True\nHttpError True\nHttpError True\n") << v;
}

TEST_F(EgressCliTest, WithoutTargetsThereAreNoToolsAndNoNetwork) {
  const bj::value v = Run({}, "await http_get('" + Origin() + "/hello')\n", 1);
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.at("error").at("type").as_string(), "NameError") << v;
  EXPECT_EQ(server_.connections(), 0);
}

TEST_F(EgressCliTest, ValidatorHintFollowsTheTargets) {
  const bj::value without = Run({}, "import urllib.request\n", 1);
  ASSERT_TRUE(without.is_object());
  ASSERT_EQ(without.at("outcome").as_string(), "validation_failed") << without;
  const std::string hint_without(without.at("violations").at(0).at("hint").as_string());
  EXPECT_NE(hint_without.find("there is no network"), std::string::npos) << hint_without;

  const bj::value with = Run({"--allow-domain", Origin()}, "import socket\n", 1);
  ASSERT_TRUE(with.is_object());
  ASSERT_EQ(with.at("outcome").as_string(), "validation_failed") << with;
  const std::string hint_with(with.at("violations").at(0).at("hint").as_string());
  EXPECT_EQ(hint_with.find("there is no network"), std::string::npos) << hint_with;
  EXPECT_NE(hint_with.find("`await http_get(url)`"), std::string::npos) << hint_with;
  EXPECT_NE(hint_with.find("http_request(method, url"), std::string::npos) << hint_with;
}

std::string Description(const testing::ProgramRun& c) {
  bj::error_code ec;
  const bj::value v = bj::parse(c.out, ec);
  if (ec) return "not JSON: " + c.out;
  return std::string(v.at("tools").at(0).at("function").at("description").as_string());
}

TEST_F(EgressCliTest, DescriptionListsTheTargetsAndTheTools) {
  const testing::ProgramRun with = RunCli({"describe", "--allow-domain", Origin() + ":GET"});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  const std::string d = Description(with);
  EXPECT_NE(d.find("Network: only these targets are reachable, by the host on the code's behalf "
                   "(scheme, host and port must match exactly):\n- " +
                   Origin() + " (GET)\n"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("`r = await http_get(url, headers=None)`"), std::string::npos) << d;
  EXPECT_NE(d.find("http_request(method, url"), std::string::npos) << d;
  const testing::ProgramRun without = RunCli({"describe"});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  const std::string none = Description(without);
  EXPECT_NE(none.find("Network: no network access"), std::string::npos) << none;
  EXPECT_EQ(none.find("http_get"), std::string::npos) << none;
}

// The client is a module loaded on first need (src/egress/egress_module_api.hpp): without it a
// run with targets still runs, and each call fails as a ToolError that names the module.
TEST_F(EgressCliTest, WithoutTheEgressModuleEachCallFailsClearly) {
  const std::string code =
      "try:\n"
      "    await http_get('" +
      Origin() +
      "/hello')\n"
      "except ToolError as e:\n"
      "    print(e)\n";
  const testing::ProgramRun c =
      testing::RunProgram({"/usr/bin/env", "CODEACT_EGRESS_MODULE=/nonexistent/codeact_egress.so",
                           CODEACT_BINARY, "run", "--allow-domain", Origin(), "-"},
                          code);
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  bj::error_code ec;
  const bj::value v = bj::parse(c.out, ec);
  ASSERT_FALSE(ec) << c.out;
  const std::string out(v.at("stdout").as_string());
  EXPECT_NE(out.find("the egress module codeact_egress.so was not found"), std::string::npos)
      << out;
  EXPECT_NE(out.find("CODEACT_EGRESS_MODULE"), std::string::npos) << out;
}

TEST_F(EgressCliTest, MalformedTargetIsExitTwo) {
  const testing::ProgramRun c =
      RunCli({"run", "--allow-domain", "api.example.org:FETCH", "-"}, "print(1)\n");
  EXPECT_EQ(c.exit_code, 2) << c.out << c.err;
  EXPECT_NE(c.err.find("unknown HTTP method \"FETCH\""), std::string::npos) << c.err;
}

}  // namespace
}  // namespace codeact
