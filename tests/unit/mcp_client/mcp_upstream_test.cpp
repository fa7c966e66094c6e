// The pure parts of upstream MCP servers (codeact/mcp_upstream.hpp): how --mcp-server's command
// line is split, how tool names become identifiers, and which server names are refused.
#include "codeact/mcp_upstream.hpp"

#include <gtest/gtest.h>

#include "codeact/mcp_upstream.hpp"
#include "mcp_client/mcp_upstream.hpp"

namespace codeact {
namespace {

std::vector<std::string> Split(std::string_view line) {
  auto words = SplitCommandLine(line);
  EXPECT_TRUE(words.ok()) << words.status().ToString();
  return words.ok() ? *words : std::vector<std::string>{};
}

TEST(SplitCommandLineTest, SplitsLikeAShellWithoutExpandingAnything) {
  EXPECT_EQ(Split("node server.mjs --root /data"),
            (std::vector<std::string>{"node", "server.mjs", "--root", "/data"}));
  EXPECT_EQ(Split("  a\tb \n "), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Split("a 'b c' \"d e\""), (std::vector<std::string>{"a", "b c", "d e"}));
  EXPECT_EQ(Split("a 'it''s' x\\ y"), (std::vector<std::string>{"a", "its", "x y"}));
  EXPECT_EQ(Split(R"(a "q\"uote\\d" 'no\escape')"),
            (std::vector<std::string>{"a", "q\"uote\\d", "no\\escape"}));
  EXPECT_EQ(Split(R"("keep \n as is")"), (std::vector<std::string>{"keep \\n as is"}));
  EXPECT_EQ(Split("x '' \"\""), (std::vector<std::string>{"x", "", ""}));
  // Nothing a shell would expand is expanded: the words reach exec as written.
  EXPECT_EQ(
      Split("echo $HOME *.txt `id` $(id) >out ; rm"),
      (std::vector<std::string>{"echo", "$HOME", "*.txt", "`id`", "$(id)", ">out", ";", "rm"}));
}

TEST(SplitCommandLineTest, RefusesWhatIsNotOneCommand) {
  for (std::string_view bad : {"", "   ", "a 'b", "a \"b", "a \\", "a \"b\\\""}) {
    auto words = SplitCommandLine(bad);
    EXPECT_FALSE(words.ok()) << bad;
    if (!words.ok()) EXPECT_EQ(words.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(NormaliseToolNameTest, MakesIdentifiers) {
  EXPECT_EQ(NormaliseToolName("get-weather"), "get_weather");
  EXPECT_EQ(NormaliseToolName("files.read"), "files_read");
  EXPECT_EQ(NormaliseToolName("2fa"), "_2fa");
  EXPECT_EQ(NormaliseToolName("ok_name"), "ok_name");
  EXPECT_EQ(NormaliseToolName("caf\xc3\xa9"), "caf__");
  EXPECT_EQ(NormaliseToolName(""), "_");
}

TEST(CheckServerNameTest, RefusesNamesThatShadowPython) {
  EXPECT_TRUE(internal::CheckServerName("github").ok());
  EXPECT_TRUE(internal::CheckServerName("fs_tools").ok());
  for (const char* name :
       {"json", "os", "asyncio", "xml", "print", "len", "open", "for", "match", "None", "call_tool",
        "ToolError", "", "1x", "a.b", "a-b", "caf\xc3\xa9"}) {
    Status s = internal::CheckServerName(name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
  }
  EXPECT_NE(internal::CheckServerName("json").message().find("standard-library module"),
            std::string::npos);
}

// An upstream tool becomes an attribute of its server's namespace: a keyword cannot be one in
// code, and a dunder would replace the namespace's own (`__class__` broke every run).
TEST(CheckUpstreamToolNameTest, RefusesKeywordsAndDundersButNotBuiltins) {
  for (const char* name : {"add", "get_weather", "print", "list", "open", "match", "type", "_",
                           "__init", "_private_"}) {
    EXPECT_TRUE(internal::CheckUpstreamToolName(name).ok()) << name;
  }
  for (const char* name :
       {"__class__", "__dict__", "__getattr__", "import", "class", "None", "await", "lambda"}) {
    EXPECT_EQ(internal::CheckUpstreamToolName(name).code(), StatusCode::kInvalidArgument) << name;
  }
  EXPECT_NE(internal::CheckUpstreamToolName("import").message().find("Python keyword"),
            std::string::npos);
  EXPECT_NE(internal::CheckUpstreamToolName("__class__").message().find("dunder"),
            std::string::npos);
}

}  // namespace
}  // namespace codeact
