// Which tools a code block names (src/provider/tool_references.hpp): the static half of per-tool
// approval.
#include "provider/tool_references.hpp"

#include <gtest/gtest.h>

namespace codeact::internal {
namespace {

const std::vector<std::string> kTools = {"add", "delete_all", "refund"};

std::set<std::string> Names(std::string_view code) {
  return FindToolReferences(code, kTools).names;
}
bool Dynamic(std::string_view code) { return FindToolReferences(code, kTools).dynamic; }

TEST(ToolReferencesTest, DirectCallsAndLiteralNamesAreReferences) {
  EXPECT_EQ(Names("x = await add(a=1, b=2)\n"), (std::set<std::string>{"add"}));
  EXPECT_EQ(Names("await call_tool('refund', order='1')\n"), (std::set<std::string>{"refund"}));
  EXPECT_EQ(Names("await call_tool(\"delete_all\")\n"), (std::set<std::string>{"delete_all"}));
  EXPECT_EQ(Names("f = refund\nawait f(order='1')\n"), (std::set<std::string>{"refund"}));
  EXPECT_EQ(Names("import asyncio\nawait asyncio.gather(add(a=1, b=2), refund(order='x'))\n"),
            (std::set<std::string>{"add", "refund"}));
  EXPECT_FALSE(Dynamic("await call_tool('refund', order='1')\n"));
  EXPECT_FALSE(Dynamic("await add(a=1, b=2)\n"));
}

TEST(ToolReferencesTest, AnUpstreamServersToolIsNamedThroughItsNamespace) {
  const std::vector<std::string> tools = {"add", "gh.create_issue", "gh.list_issues", "fs.read"};
  auto names = [&](std::string_view code) { return FindToolReferences(code, tools).names; };
  EXPECT_EQ(names("await gh.create_issue(title='x')\n"),
            (std::set<std::string>{"gh.create_issue"}));
  EXPECT_EQ(names("await gh . list_issues()\nawait fs.read(path='/x')\n"),
            (std::set<std::string>{"gh.list_issues", "fs.read"}));
  EXPECT_EQ(names("await call_tool('gh.create_issue')\n"),
            (std::set<std::string>{"gh.create_issue"}));
  // The namespace itself passed around may reach each of its tools.
  EXPECT_EQ(names("g = gh\nawait g.create_issue()\n"),
            (std::set<std::string>{"gh.create_issue", "gh.list_issues"}));
  EXPECT_EQ(names("await gh.nothing()\n"), (std::set<std::string>{}));
  EXPECT_TRUE(names("print('gh is great')\n").empty());
}

TEST(ToolReferencesTest, CommentsAndStringTextAreNotReferences) {
  EXPECT_TRUE(Names("# refund everything later\nprint('call add and refund now')\n").empty());
  EXPECT_TRUE(Names("s = '''\nrefund(order=1)\n'''\nprint(s)\n").empty());
  EXPECT_TRUE(Names("print(r'\\' refund')\n").empty());
  EXPECT_TRUE(Names("additional = 1\nrefunds = 2\n").empty());
  EXPECT_FALSE(Dynamic("print('call_tool(x)')  # call_tool(y)\n"));
}

TEST(ToolReferencesTest, FStringInteriorsAreCode) {
  EXPECT_EQ(Names("print(f'{await refund(order=1)}')\n"), (std::set<std::string>{"refund"}));
  EXPECT_EQ(Names("print(f\"{x!r} {add}\")\n"), (std::set<std::string>{"add"}));
}

TEST(ToolReferencesTest, DynamicNamesCountAsEveryTool) {
  for (const char* code : {
           "name = 'ref' + 'und'\nawait call_tool(name, order='1')\n",
           "await call_tool(f'ref{x}', order='1')\n", "await call_tool('ref' 'und')\n",
           "await call_tool(*names)\n", "c = call_tool\nawait c('refund')\n",
           "await globals()['ref' + 'und'](order=1)\n", "fn = getattr(mod, 'x')\n",
           "\xef\xbd\x92"
           "efund = 1\n",  // a fullwidth letter: NFKC folds it to `refund`
       }) {
    EXPECT_TRUE(Dynamic(code)) << code;
  }
}

TEST(ToolReferencesTest, NothingBreaksOnOddInput) {
  for (const char* code : {"", "'", "\"\"\"", "f'{", "call_tool", "call_tool(", "call_tool('add'",
                           "\\", "r'\\", "#"}) {
    (void)FindToolReferences(code, kTools);
  }
  EXPECT_TRUE(Dynamic("call_tool('add'"));
}

}  // namespace
}  // namespace codeact::internal
