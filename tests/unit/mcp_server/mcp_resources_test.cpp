// Resources and prompts through McpServer (mcp_resources.hpp): a tools/call's CSV comes back as a
// resource_link that resources/read returns to its caller, and to no other; an unknown URI is
// -32002 (handshake) or -32602 (2026-07-28); the instructions are the one prompt; the
// capabilities say so.
#include "mcp_server/mcp_resources.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <memory>
#include <string>

#include "mcp_server/mcp_file_store.hpp"
#include "mcp_server/mcp_server.hpp"

namespace codeact::internal {
namespace {

namespace json = boost::json;

constexpr std::string_view kStatelessMeta =
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
    R"("io.modelcontextprotocol/clientCapabilities":{}})";

McpServerOptions Options(std::shared_ptr<McpFileStore> files, const std::string& caller) {
  McpServerOptions o;
  o.log_to_stderr = false;
  o.instructions = "Write Python; print what you need.";
  o.files = std::move(files);
  o.caller = caller;
  o.tool_definition = [] { return std::string(R"({"name":"execute_code","inputSchema":{}})"); };
  o.execute = [](const std::string&, const CancellationToken&, const OutputCallback&) {
    ExecutionResult r;
    r.outcome = Outcome::kOk;
    r.exit_code = 0;
    r.files.push_back({"/out/t.csv", "text/csv", 8, "a,b\n1,2\n"});
    r.files.push_back({"/out/raw.bin", "application/octet-stream", 3, std::string("\0\1\2", 3)});
    return r;
  };
  return o;
}

json::object Ask(McpServer& server, const std::string& line) {
  const auto response = server.HandleLine(line);
  EXPECT_TRUE(response.has_value()) << line;
  return response ? json::parse(*response).as_object() : json::object{};
}

std::string Request(int id, const std::string& method, const std::string& params) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
         R"(","params":)" + params + "}";
}

const std::string kCall =
    Request(1, "tools/call", R"({"name":"execute_code","arguments":{"code":"x"}})");

TEST(McpResourcesTest, ACapturedCsvIsALinkThatResourcesReadReturns) {
  auto files = std::make_shared<McpFileStore>();
  McpServer server(Options(files, "alice"));
  const json::object call = Ask(server, kCall);
  const json::array& content = call.at("result").at("content").as_array();
  ASSERT_EQ(content.size(), 3u) << json::serialize(call);
  const json::object& link = content[1].as_object();
  EXPECT_EQ(link.at("type"), "resource_link");
  EXPECT_EQ(link.at("name"), "/out/t.csv");
  EXPECT_EQ(link.at("mimeType"), "text/csv");
  EXPECT_EQ(link.at("size"), 8);
  const std::string uri(link.at("uri").as_string());
  // structuredContent keeps the result JSON as it is: the bytes in base64.
  EXPECT_EQ(call.at("result").at("structuredContent").at("files").at(0).at("data_base64"),
            "YSxiCjEsMgo=");

  const json::object read =
      Ask(server, Request(2, "resources/read", R"({"uri":")" + uri + R"("})"));
  const json::object& got = read.at("result").at("contents").at(0).as_object();
  EXPECT_EQ(got.at("uri").as_string(), uri);
  EXPECT_EQ(got.at("mimeType"), "text/csv");
  EXPECT_EQ(got.at("text"), "a,b\n1,2\n");
  const std::string raw_uri(content[2].at("uri").as_string());
  const json::object raw =
      Ask(server, Request(3, "resources/read", R"({"uri":")" + raw_uri + R"("})"));
  EXPECT_EQ(raw.at("result").at("contents").at(0).at("blob"), "AAEC");

  const json::object list = Ask(server, Request(4, "resources/list", "{}"));
  const json::array& listed = list.at("result").at("resources").as_array();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].at("uri").as_string(), uri);
  EXPECT_EQ(listed[0].at("name"), "/out/t.csv");

  // Another caller's server over the same store neither reads nor lists it.
  McpServer other(Options(files, "bob"));
  const json::object refused =
      Ask(other, Request(5, "resources/read", R"({"uri":")" + uri + R"("})"));
  EXPECT_EQ(refused.at("error").at("code"), kMcpResourceNotFound);
  EXPECT_NE(std::string(refused.at("error").at("message").as_string()).find("Resource not found"),
            std::string::npos);
  EXPECT_EQ(refused.at("error").at("data").at("uri").as_string(), uri);
  EXPECT_TRUE(Ask(other, Request(6, "resources/list", "{}"))
                  .at("result")
                  .at("resources")
                  .as_array()
                  .empty());
}

TEST(McpResourcesTest, AnUnknownUriUnder20260728IsInvalidParams) {
  McpServer server(Options(std::make_shared<McpFileStore>(), "stdio"));
  const json::object r = Ask(server, Request(1, "resources/read",
                                             R"({"uri":"codeact://files/nope/a.csv",)" +
                                                 std::string(kStatelessMeta) + "}"));
  EXPECT_EQ(r.at("error").at("code"), -32602);
  const json::object missing = Ask(server, Request(2, "resources/read", "{}"));
  EXPECT_EQ(missing.at("error").at("code"), -32602);
  const json::object templates = Ask(server, Request(3, "resources/templates/list", "{}"));
  EXPECT_TRUE(templates.at("result").at("resourceTemplates").as_array().empty());
}

TEST(McpResourcesTest, TheInstructionsAreThePrompt) {
  McpServer server(Options(nullptr, "stdio"));
  const json::object list = Ask(server, Request(1, "prompts/list", "{}"));
  const json::array& prompts = list.at("result").at("prompts").as_array();
  ASSERT_EQ(prompts.size(), 1u);
  EXPECT_EQ(prompts[0].at("name").as_string(), kInstructionsPromptName);
  EXPECT_FALSE(prompts[0].at("description").as_string().empty());
  const json::object get = Ask(
      server,
      Request(2, "prompts/get", R"({"name":")" + std::string(kInstructionsPromptName) + R"("})"));
  const json::object& message = get.at("result").at("messages").at(0).as_object();
  EXPECT_EQ(message.at("role"), "user");
  EXPECT_EQ(message.at("content").at("type"), "text");
  EXPECT_EQ(message.at("content").at("text"), "Write Python; print what you need.");
  const json::object unknown = Ask(server, Request(3, "prompts/get", R"({"name":"other"})"));
  EXPECT_EQ(unknown.at("error").at("code"), -32602);
  EXPECT_NE(std::string(unknown.at("error").at("message").as_string()).find("unknown prompt"),
            std::string::npos);
  // Under 2026-07-28 the result is marked as every stateless result is.
  const json::object stateless =
      Ask(server, Request(4, "prompts/list", "{" + std::string(kStatelessMeta) + "}"));
  EXPECT_EQ(stateless.at("result").at("resultType"), "complete");
}

TEST(McpResourcesTest, InitializeAndDiscoverDeclareResourcesAndPrompts) {
  McpServer server(Options(nullptr, "stdio"));
  const json::object init =
      Ask(server, Request(1, "initialize",
                          R"({"protocolVersion":"2025-11-25","capabilities":{},)"
                          R"("clientInfo":{"name":"t","version":"1"}})"));
  const json::object& caps = init.at("result").at("capabilities").as_object();
  EXPECT_TRUE(caps.contains("tools"));
  EXPECT_TRUE(caps.contains("resources"));
  EXPECT_TRUE(caps.contains("prompts"));
  const json::object discover =
      Ask(server, Request(2, "server/discover", "{" + std::string(kStatelessMeta) + "}"));
  EXPECT_EQ(discover.at("result").at("capabilities"), json::value(caps));
}

}  // namespace
}  // namespace codeact::internal
