// What a Microsoft Agent Framework user meets when porting (issue 21), on the provider with a
// fake executor: un-awaited tool calls refused by the validator, tool names that shadow a
// builtin refused at registration, ExecuteCodeFunction bound to one snapshot, the options
// (allow-listed builtins, replaced import lists, a working directory, instructions for tools the
// model also sees, list and batch registry operations).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "codeact/json.hpp"
#include "codeact/provider.hpp"
#include "testing/fake_executor.hpp"

namespace codeact {
namespace {

using testing::FakeExecutor;

std::shared_ptr<CodeActProvider> Make(ProviderOptions options = {}, FakeExecutor** fake = nullptr) {
  auto executor = std::make_unique<FakeExecutor>();
  executor->traits_ = {false, false, "", "every call starts a fresh interpreter."};
  if (fake) *fake = executor.get();
  auto p = CodeActProvider::Create(std::move(options), std::move(executor));
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

HostTool Tool(const std::string& name) {
  HostTool t;
  t.name = name;
  t.description = "does " + name;
  t.handler = [](const std::string&) { return ToolResult::Success("3"); };
  return t;
}

std::string TempDir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("codeact-maf-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(p);
  return p.string();
}

// --- tool calls are awaited -----------------------------------------------------------------

TEST(MafPortTest, AToolCallUsedWithoutAwaitFailsValidationWithTheLine) {
  FakeExecutor* fake = nullptr;
  auto p = Make({}, &fake);
  ASSERT_TRUE(p->AddTool(Tool("add")).ok());
  const ExecutionResult r = p->Execute("x = 1\nr = add(a=1, b=2)\nprint(r)\n");
  EXPECT_EQ(r.outcome, Outcome::kValidationFailed);
  EXPECT_EQ(fake->runs, 0);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].rule, "tool-not-awaited");
  EXPECT_EQ(r.violations[0].line, 2);
  EXPECT_NE(r.violations[0].message.find("add(...) on line 2 is not awaited"), std::string::npos)
      << r.violations[0].message;
  EXPECT_NE(r.violations[0].message.find("add await"), std::string::npos);
}

TEST(MafPortTest, AwaitedCallsAndFanOutsRun) {
  FakeExecutor* fake = nullptr;
  auto p = Make({}, &fake);
  ASSERT_TRUE(p->AddTool(Tool("add")).ok());
  for (const char* code : {
           "print(await add(a=1, b=2))\n",
           "import asyncio\nprint(await asyncio.gather(*[add(a=i, b=1) for i in range(3)]))\n",
           "import asyncio\ncoros = [add(a=i, b=1) for i in range(3)]\n"
           "print(await asyncio.gather(*coros))\n",
           "import asyncio\nt = asyncio.create_task(add(a=1, b=2))\nprint(await t)\n",
       }) {
    const ExecutionResult r = p->Execute(code);
    EXPECT_EQ(r.outcome, Outcome::kOk) << code << ToJson(r);
  }
  EXPECT_EQ(fake->runs, 4);
}

TEST(MafPortTest, ARemovedToolIsNoLongerCheckedForAwait) {
  auto p = Make();
  ASSERT_TRUE(p->AddTool(Tool("add")).ok());
  ASSERT_TRUE(p->RemoveTool("add"));
  // Without the tool, `add` is just an unknown name: the run fails at run time, not here.
  EXPECT_EQ(p->Execute("r = add(a=1, b=2)\nprint(r)\n").outcome, Outcome::kOk);
}

// --- tool names -----------------------------------------------------------------------------

TEST(MafPortTest, ToolNamesThatShadowAreRefusedAtRegistration) {
  auto p = Make();
  const struct {
    const char* name;
    const char* says;
  } cases[] = {
      {"sum", "shadows the Python builtin sum()"},
      {"print", "shadows the Python builtin print()"},
      {"class", "is a Python keyword"},
      {"call_tool", "is a name the sandbox defines itself"},
      {"ToolError", "is a name the sandbox defines itself"},
      {"http_request", "is a name the sandbox defines itself"},
      {"__init__", "is a dunder name"},
      {"json", "is the name of the module json, which the code may import"},
      {"asyncio", "is the name of the module asyncio"},
      {"collections", "is the name of the module collections"},
  };
  for (const auto& c : cases) {
    const Status s = p->AddTool(Tool(c.name));
    EXPECT_FALSE(s.ok()) << c.name;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("rename the tool"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(p->ListTools().empty());
  // Names that shadow nothing, and names the code reaches only through call_tool.
  for (const char* ok : {"sum_numbers", "fetch-page", "weather.today", "Print", "match"}) {
    EXPECT_TRUE(p->AddTool(Tool(ok)).ok()) << ok;
  }
}

TEST(MafPortTest, AModuleNameIsRefusedOnlyWhenThePolicyAllowsIt) {
  ProviderOptions options;
  options.policy.extra_allowed_imports = {"xml.*"};
  auto p = Make(options);
  EXPECT_FALSE(p->AddTool(Tool("xml")).ok());
  // `sys` is blocked: `import sys` cannot hide the tool.
  EXPECT_TRUE(p->AddTool(Tool("sys")).ok());
}

TEST(MafPortTest, AddToolsIsAllOrNothing) {
  auto p = Make();
  std::vector<HostTool> batch = {Tool("alpha"), Tool("max"), Tool("beta")};
  const Status s = p->AddTools(batch);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("\"max\""), std::string::npos) << s.message();
  EXPECT_TRUE(p->ListTools().empty());
  ASSERT_TRUE(p->AddTools({Tool("beta"), Tool("alpha"), Tool("gamma")}).ok());
  std::vector<std::string> names;
  for (const auto& t : p->ListTools()) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", "beta", "gamma"}));
  EXPECT_EQ(p->RemoveTools({"alpha", "gamma", "nope"}), 2u);
  ASSERT_EQ(p->ListTools().size(), 1u);
  EXPECT_EQ(p->ListTools()[0].name, "beta");
}

TEST(MafPortTest, MountAndNetworkListsAndBatches) {
  auto p = Make();
  const std::string a = TempDir("a"), b = TempDir("b");
  ASSERT_TRUE(p->AddMounts({{a, "/in", MountMode::kReadOnly}, {b, "/out"}}).ok());
  // A batch with a bad mount changes nothing.
  EXPECT_FALSE(p->AddMounts({{a, "/more"}, {"/no/such/dir", "/bad"}}).ok());
  EXPECT_FALSE(p->AddMounts({{a, "/same"}, {b, "/same/"}}).ok());
  const auto mounts = p->ListMounts();
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0].mount_path, "/in");
  EXPECT_EQ(mounts[1].mount_path, "/out");
  EXPECT_EQ(p->RemoveMounts({"/in", "/out", "/none"}), 2u);
  EXPECT_TRUE(p->ListMounts().empty());
  ASSERT_TRUE(p->AddNetworkTarget("b.example").ok());
  ASSERT_TRUE(p->AddNetworkTarget("a.example").ok());
  EXPECT_EQ(p->ListNetworkTargets(), (std::vector<std::string>{"a.example", "b.example"}));
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

// --- ExecuteCodeFunction --------------------------------------------------------------------

TEST(MafPortTest, ExecuteCodeFunctionIsBoundToItsSnapshotUntilRefresh) {
  FakeExecutor* fake = nullptr;
  auto p = Make({}, &fake);
  ASSERT_TRUE(p->AddTool(Tool("first_tool")).ok());
  ExecuteCodeFunction function(p);
  ASSERT_TRUE(p->AddTool(Tool("second_tool")).ok());

  EXPECT_TRUE(function.Stale());
  const std::string before = function.Definition(DefinitionFormat::kMcp);
  EXPECT_NE(before.find("first_tool"), std::string::npos);
  EXPECT_EQ(before.find("second_tool"), std::string::npos);
  // The run has the tools the model was shown, not the registry's current ones.
  (void)function.InvokeResult(R"j({"code": "print(1)"})j");
  EXPECT_EQ(fake->last_tools, (std::vector<std::string>{"first_tool"}));

  EXPECT_TRUE(function.Refresh());
  EXPECT_FALSE(function.Stale());
  EXPECT_FALSE(function.Refresh());  // nothing changed since
  EXPECT_NE(function.Definition(DefinitionFormat::kMcp).find("second_tool"), std::string::npos);
  (void)function.InvokeResult(R"j({"code": "print(1)"})j");
  EXPECT_EQ(fake->last_tools, (std::vector<std::string>{"first_tool", "second_tool"}));
}

TEST(MafPortTest, ABoundFunctionValidatesAgainstItsOwnTools) {
  auto p = Make();
  ExecuteCodeFunction function(p);
  ASSERT_TRUE(p->AddTool(Tool("add")).ok());
  // The model was not shown `add`: for this function it is not a tool, so nothing to await.
  EXPECT_EQ(function.InvokeResult(R"j({"code": "r = add(a=1)\nprint(r)"})j").outcome, Outcome::kOk);
  function.Refresh();
  EXPECT_EQ(function.InvokeResult(R"j({"code": "r = add(a=1)\nprint(r)"})j").outcome,
            Outcome::kValidationFailed);
}

// --- options --------------------------------------------------------------------------------

TEST(MafPortTest, InstructionsForToolsTheModelAlsoSees) {
  auto p = Make();
  const std::string hidden = p->Instructions();
  const std::string visible = p->Instructions(/*tools_visible_to_model=*/true);
  EXPECT_NE(hidden.find("reachable only from inside the code"), std::string::npos);
  EXPECT_EQ(visible.find("reachable only"), std::string::npos);
  EXPECT_NE(visible.find("can also be called from inside the code"), std::string::npos);
  EXPECT_EQ(p->Instructions(false), hidden);
}

TEST(MafPortTest, AllowedBuiltinsBlockEveryOtherBuiltin) {
  ProviderOptions options;
  options.policy.allowed_builtins = std::vector<std::string>{"print", "len", "eval"};
  auto p = Make(options);
  EXPECT_EQ(p->Execute("print(len([1, 2]))\n").outcome, Outcome::kOk);
  const ExecutionResult r = p->Execute("print(sum([1, 2]))\n");
  EXPECT_EQ(r.outcome, Outcome::kValidationFailed);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].rule, "builtin-blocked");
  EXPECT_NE(r.violations[0].message.find("sum()"), std::string::npos);
  // A blocked builtin stays blocked although the allow-list names it.
  EXPECT_EQ(p->Execute("eval('1')\n").outcome, Outcome::kValidationFailed);
  const std::string description = p->ToolDescription(p->Snapshot());
  EXPECT_NE(description.find("Builtins: only print, len."), std::string::npos) << description;
}

TEST(MafPortTest, ReplacedImportListsReachTheRuntimeGuardsPatterns) {
  auto validator = Validator::Embedded();
  ASSERT_TRUE(validator.ok()) << validator.status().message();
  ValidationPolicy defaults;
  ValidationPolicy replaced;
  replaced.allowed_imports = std::vector<std::string>{"json", "xml.*"};
  replaced.blocked_imports = std::vector<std::string>{"xml.sax"};
  auto before = (*validator)->AllowedImports(defaults);
  auto after = (*validator)->AllowedImports(replaced);
  ASSERT_TRUE(before.ok() && after.ok());
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  EXPECT_TRUE(has(*before, "math"));
  EXPECT_FALSE(has(*after, "math"));  // the allow-list was replaced, not extended
  EXPECT_TRUE(has(*after, "xml.*"));
  EXPECT_TRUE(has(*after, "!xml.sax")) << "the replaced block list reaches the guard";
  // The validator agrees.
  EXPECT_TRUE((*validator)->Validate("import xml.dom\n", replaced).ok);
  EXPECT_FALSE((*validator)->Validate("import xml.sax\n", replaced).ok);
  EXPECT_FALSE((*validator)->Validate("import math\n", replaced).ok);
}

TEST(MafPortTest, AWorkingDirectoryIsAReadWriteMountAtWork) {
  ProviderOptions options;
  options.working_directory = TempDir("work");
  auto p = Make(options);
  const auto work = p->GetMount("/work");
  ASSERT_TRUE(work.has_value());
  EXPECT_EQ(work->mode, MountMode::kReadWrite);
  EXPECT_EQ(work->write_bytes_limit, FileMount{}.write_bytes_limit);
  std::filesystem::remove_all(options.working_directory);

  ProviderOptions missing;
  missing.working_directory = "/no/such/codeact/dir";
  auto refused = CodeActProvider::Create(missing, std::make_unique<FakeExecutor>());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("working directory"), std::string::npos);
}

}  // namespace
}  // namespace codeact
