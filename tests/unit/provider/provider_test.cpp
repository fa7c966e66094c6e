// The provider with a fake executor: registries, snapshots, fingerprint, approval, description.
#include "codeact/provider.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include "codeact/json.hpp"
#include "testing/fake_executor.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;

using testing::FakeExecutor;

struct TestProvider {
  static std::shared_ptr<CodeActProvider> Make(ProviderOptions options = {},
                                               FakeExecutor** fake = nullptr) {
    // Records what it was asked to run; runs nothing; prints "ran".
    auto executor = std::make_unique<FakeExecutor>();
    executor->stdout_text = "ran\n";
    executor->traits_ = {false, false, "", "every call starts a fresh interpreter."};
    executor->host_paths_follow_isolation = true;
    if (fake) *fake = executor.get();
    return *CodeActProvider::Create(std::move(options), std::move(executor));
  }
};

HostTool Tool(const std::string& name, bool approval = false) {
  return {
      name, "does " + name,
      R"({"type":"object","properties":{"q":{"type":"string","description":"the query"},"n":{"type":"integer"}},"required":["q"]})",
      approval, [](const std::string&) { return ToolResult::Success("1"); }};
}

std::string TempDirPath(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("codeact-provider-test-" + name + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(p);
  return p.string();
}

TEST(ProviderTest, ToolRegistryAddReplacesRemoveAndClear) {
  auto p = TestProvider::Make();
  EXPECT_TRUE(p->AddTool(Tool("search")).ok());
  HostTool replacement = Tool("search");
  replacement.description = "replaced";
  EXPECT_TRUE(p->AddTool(replacement).ok());
  ASSERT_TRUE(p->GetTool("search").has_value());
  EXPECT_EQ(p->GetTool("search")->description, "replaced");
  EXPECT_EQ(p->Snapshot().tools.size(), 1u);
  EXPECT_TRUE(p->RemoveTool("search"));
  EXPECT_FALSE(p->RemoveTool("search"));
  EXPECT_TRUE(p->AddTool(Tool("a")).ok());
  EXPECT_TRUE(p->AddTool(Tool("b")).ok());
  p->ClearTools();
  EXPECT_TRUE(p->Snapshot().tools.empty());
}

TEST(ProviderTest, MountRegistryNormalisesAndReplaces) {
  auto p = TestProvider::Make();
  const std::string dir = TempDirPath("mounts");
  ASSERT_TRUE(p->AddMount({dir, "data//out/./", MountMode::kReadWrite}).ok());
  ASSERT_TRUE(p->GetMount("/data/out").has_value());
  EXPECT_TRUE(p->AddMount({dir, "/data/out", MountMode::kReadOnly}).ok());
  EXPECT_EQ(p->Snapshot().mounts.size(), 1u);
  EXPECT_EQ(p->Snapshot().mounts[0].mode, MountMode::kReadOnly);
  EXPECT_FALSE(p->AddMount({dir, "/a/../b", MountMode::kReadOnly}).ok());
  EXPECT_FALSE(p->AddMount({dir + "/missing", "/m", MountMode::kReadOnly}).ok());
  EXPECT_TRUE(p->RemoveMount("/data/out"));
  EXPECT_TRUE(p->Snapshot().mounts.empty());
  std::filesystem::remove_all(dir);
}

TEST(ProviderTest, SnapshotIsUnaffectedByLaterChanges) {
  auto p = TestProvider::Make();
  EXPECT_TRUE(p->AddTool(Tool("a")).ok());
  const RunSnapshot before = p->Snapshot();
  EXPECT_TRUE(p->AddTool(Tool("b")).ok());
  p->RemoveTool("a");
  ASSERT_EQ(before.tools.size(), 1u);
  EXPECT_EQ(before.tools[0].name, "a");
  EXPECT_EQ(p->Snapshot().tools[0].name, "b");
}

TEST(ProviderTest, FingerprintFollowsConfigNotToolOrder) {
  auto p1 = TestProvider::Make();
  auto p2 = TestProvider::Make();
  EXPECT_TRUE(p1->AddTool(Tool("a")).ok());
  EXPECT_TRUE(p1->AddTool(Tool("b")).ok());
  EXPECT_TRUE(p2->AddTool(Tool("b")).ok());
  EXPECT_TRUE(p2->AddTool(Tool("a")).ok());
  EXPECT_EQ(p1->Snapshot().fingerprint, p2->Snapshot().fingerprint);
  EXPECT_EQ(p1->Snapshot().fingerprint, p1->Snapshot().fingerprint);

  const std::string base = p1->Snapshot().fingerprint;
  EXPECT_TRUE(p1->AddTool(Tool("c")).ok());
  const std::string with_tool = p1->Snapshot().fingerprint;
  EXPECT_NE(with_tool, base);

  ExecutionLimits limits;
  limits.wall_timeout_ms = 1234;
  p1->SetLimits(limits);
  const std::string with_limits = p1->Snapshot().fingerprint;
  EXPECT_NE(with_limits, with_tool);

  const std::string dir = TempDirPath("fp");
  ASSERT_TRUE(p1->AddMount({dir, "/out"}).ok());
  EXPECT_NE(p1->Snapshot().fingerprint, with_limits);
  p1->SetEnvironment({{"A", "1"}});
  const std::string with_env = p1->Snapshot().fingerprint;
  p1->SetEnvironment({{"A", "2"}});
  EXPECT_NE(p1->Snapshot().fingerprint, with_env);
  std::filesystem::remove_all(dir);
}

TEST(ProviderTest, NoApprovalNeededByDefault) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  EXPECT_TRUE(p->AddTool(Tool("read")).ok());
  const ExecutionResult r = p->Execute("print(1)\n");
  EXPECT_EQ(r.outcome, Outcome::kOk);
  EXPECT_EQ(fake->runs, 1);
}

TEST(ProviderTest, OnlyRunsThatReferenceAGatedToolNeedApproval) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  EXPECT_TRUE(p->AddTool(Tool("read")).ok());
  EXPECT_TRUE(p->AddTool(Tool("delete_all", /*approval=*/true)).ok());
  // No gated tool named: runs without asking, and the gated tool stays gated in its snapshot
  // (the bridge refuses its calls: tool_bridge_test).
  ExecutionResult r = p->Execute("print(1)\nawait read(q='x')\n");
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_EQ(fake->runs, 1);
  EXPECT_EQ(fake->last_gated, std::vector<std::string>{"delete_all"});

  // Named directly, through call_tool, or dynamically: approval first.
  for (const char* code : {"await delete_all(q='x')\n", "await call_tool('delete_all', q='x')\n",
                           "name = 'delete' + '_all'\nawait call_tool(name, q='x')\n"}) {
    r = p->Execute(code);
    EXPECT_EQ(r.outcome, Outcome::kApprovalRequired) << code;
    EXPECT_NE(r.message.find("delete_all"), std::string::npos) << r.message;
  }
  EXPECT_NE(p->Execute("await call_tool(n, q='x')\n").message.find("names a tool dynamically"),
            std::string::npos);
  EXPECT_EQ(fake->runs, 1);

  r = p->Execute("await delete_all(q='x')\n", {.approved = false});
  EXPECT_EQ(r.outcome, Outcome::kApprovalRequired);
  EXPECT_EQ(fake->runs, 1);

  ApprovalRequest seen;
  r = p->Execute("await delete_all(q='x')\n", {.approve = [&](const ApprovalRequest& req) {
                   seen = req;
                   return true;
                 }});
  EXPECT_EQ(r.outcome, Outcome::kOk);
  EXPECT_EQ(seen.code, "await delete_all(q='x')\n");
  EXPECT_EQ(seen.tools_requiring_approval, std::vector<std::string>{"delete_all"});
  EXPECT_FALSE(seen.any_tool);
  EXPECT_EQ(fake->runs, 2);
  EXPECT_TRUE(fake->last_gated.empty()) << "an approved run may call every tool";

  // The callback is not asked for a run that names no gated tool.
  bool asked = false;
  r = p->Execute("print(2)\n", {.approve = [&](const ApprovalRequest&) { return asked = true; }});
  EXPECT_EQ(r.outcome, Outcome::kOk);
  EXPECT_FALSE(asked);
  EXPECT_EQ(fake->last_gated, std::vector<std::string>{"delete_all"});

  r = p->Execute("await delete_all()\n", {.approve = [](const ApprovalRequest&) -> bool {
                   throw std::runtime_error("x");
                 }});
  EXPECT_EQ(r.outcome, Outcome::kApprovalRequired);  // a failing approver never approves
}

TEST(ProviderTest, AlwaysRequireMode) {
  FakeExecutor* fake = nullptr;
  ProviderOptions options;
  options.approval_mode = ApprovalMode::kAlwaysRequire;
  auto p = TestProvider::Make(options, &fake);
  EXPECT_EQ(p->Execute("print(1)\n").outcome, Outcome::kApprovalRequired);
  EXPECT_EQ(p->Execute("print(1)\n", {.approved = true}).outcome, Outcome::kOk);
  EXPECT_EQ(fake->runs, 1);
}

TEST(ProviderTest, ValidationRunsBeforeTheExecutor) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  const ExecutionResult r = p->Execute("import subprocess\n");
  EXPECT_EQ(r.outcome, Outcome::kValidationFailed);
  ASSERT_FALSE(r.violations.empty());
  EXPECT_EQ(r.violations[0].rule, "import-blocked");
  EXPECT_EQ(fake->runs, 0);
}

TEST(ProviderTest, ExecuteCodeFunctionArgumentErrorsAreResults) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  const ExecuteCodeFunction f(p);
  for (const char* bad :
       {"", "[]", R"({"code": 3})", R"({"code": "   \n"})", R"({"kode": "x"})", "{"}) {
    const bj::value v = bj::parse(f.Invoke(bad));
    EXPECT_EQ(v.at("outcome").as_string(), "validation_failed") << bad;
    EXPECT_EQ(v.at("violations").at(0).at("rule").as_string(), "argument-error") << bad;
    EXPECT_EQ(v.at("success").as_bool(), false);
  }
  EXPECT_EQ(fake->runs, 0);
  const bj::value ok = bj::parse(f.Invoke(R"j({"code": "print(1)"})j"));
  EXPECT_EQ(ok.at("success").as_bool(), true);
  EXPECT_EQ(fake->last_code, "print(1)");
}

TEST(ProviderTest, DefinitionsInBothFormats) {
  auto p = TestProvider::Make();
  EXPECT_TRUE(p->AddTool(Tool("search")).ok());
  const ExecuteCodeFunction f(p);
  const bj::value openai = bj::parse(f.Definition(DefinitionFormat::kOpenAI));
  EXPECT_EQ(openai.at("type").as_string(), "function");
  EXPECT_EQ(openai.at("function").at("name").as_string(), "execute_code");
  EXPECT_EQ(openai.at("function").at("parameters").at("required").at(0).as_string(), "code");
  EXPECT_NE(std::string(openai.at("function").at("description").as_string()).find("search"),
            std::string::npos);
  const bj::value mcp = bj::parse(f.Definition(DefinitionFormat::kMcp));
  EXPECT_EQ(mcp.at("name").as_string(), "execute_code");
  EXPECT_EQ(mcp.at("inputSchema").at("properties").at("code").at("type").as_string(), "string");
}

TEST(ProviderTest, DescriptionListsToolsMountsAndLimits) {
  auto p = TestProvider::Make();
  EXPECT_TRUE(p->AddTool(Tool("search")).ok());
  const std::string dir = TempDirPath("desc");
  ASSERT_TRUE(p->AddMount({dir, "/out"}).ok());
  ExecutionLimits limits;
  limits.wall_timeout_ms = 12'000;
  p->SetLimits(limits);
  const std::string d = p->ToolDescription(p->Snapshot());
  EXPECT_NE(d.find("`search(q: string, n: integer = None)` — does search"), std::string::npos) << d;
  EXPECT_NE(d.find("await call_tool(\"search\", q=..., n=...)"), std::string::npos) << d;
  EXPECT_NE(d.find("await search(q=..., n=...)"), std::string::npos) << d;
  EXPECT_NE(d.find("q: the query"), std::string::npos) << d;
  EXPECT_NE(d.find("/out (read-write)"), std::string::npos) << d;
  EXPECT_NE(d.find(dir), std::string::npos) << "the process level exposes host paths: " << d;
  EXPECT_NE(d.find("12 s wall clock"), std::string::npos) << d;
  EXPECT_NE(d.find("does not persist"), std::string::npos) << d;
  std::filesystem::remove_all(dir);
}

// The core text tells the model what code is allowed before its first attempt, within its
// budget; what grows with the configuration comes after it.
TEST(ProviderTest, TheDescriptionsCoreStatesThePolicyWithinItsBudget) {
  auto p = TestProvider::Make();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(p->AddTool(Tool("tool_" + std::to_string(i))).ok());
  const RunSnapshot snapshot = p->Snapshot();
  const ToolDescriptionParts parts = p->DescribeRun(snapshot);
  EXPECT_LE(parts.core.size(), kDescriptionCoreBudget) << parts.core;
  EXPECT_NE(parts.core.find("Run Python 3."), std::string::npos) << parts.core;
  EXPECT_NE(parts.core.find("Imports allowed (standard library, nothing else): "),
            std::string::npos)
      << parts.core;
  for (const char* module : {"math", "json", "collections", "datetime", "re", "asyncio"}) {
    EXPECT_NE(parts.core.find(std::string(" ") + module + ","), std::string::npos) << module;
  }
  EXPECT_NE(parts.core.find("os (only os.environ and os.path)"), std::string::npos);
  EXPECT_EQ(parts.core.find("subprocess"), std::string::npos) << "blocked modules are not listed";
  EXPECT_NE(parts.core.find("Builtins: all except "), std::string::npos);
  for (const char* builtin : {"eval", "exec", "setattr", "__import__"}) {
    EXPECT_NE(parts.core.find(builtin), std::string::npos) << builtin;
  }
  EXPECT_NE(parts.core.find("Code: at most 64 KiB"), std::string::npos);
  EXPECT_NE(parts.core.find("30 s wall clock"), std::string::npos) << parts.core;
  EXPECT_NE(parts.core.find("memory"), std::string::npos);
  EXPECT_NE(parts.core.find("`await call_tool(\"name\", arg=value)`"), std::string::npos);
  EXPECT_NE(parts.core.find("raises ToolError"), std::string::npos);
  EXPECT_NE(parts.core.find("Result fields:"), std::string::npos);
  EXPECT_EQ(parts.core.find("tool_0"), std::string::npos) << "signatures belong to the details";
  EXPECT_NE(parts.details.find("`tool_0(q: string, n: integer = None)`"), std::string::npos);
  EXPECT_EQ(p->ToolDescription(snapshot), parts.core + "\n" + parts.details);
}

// What a model's first attempts need to know (issue 36): classes work, the dunder rule and the
// accepted forms, the working directory and what persists there; no "Nothing persists", and no
// __build_class__ among the builtins (it reads as if class statements failed).
TEST(ProviderTest, TheDescriptionNamesClassesTheDunderRuleAndTheWorkingDirectory) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  fake->isolation_ = IsolationLevel::kNamespaces;
  ToolDescriptionParts parts = p->DescribeRun(p->Snapshot());
  EXPECT_LE(parts.core.size(), kDescriptionCoreBudget) << parts.core;
  EXPECT_EQ(parts.core.find("__build_class__"), std::string::npos) << parts.core;
  EXPECT_NE(parts.core.find("Classes, dataclasses, Enum work."), std::string::npos);
  EXPECT_NE(parts.core.find("Dunder attributes (x.__class__) are refused but __name__, __doc__"),
            std::string::npos)
      << parts.core;
  EXPECT_NE(parts.details.find("getattr(obj, \"name\", default)"), std::string::npos);
  EXPECT_NE(parts.details.find("vars(obj) and obj.__dict__ give a read-only copy"),
            std::string::npos);
  EXPECT_NE(parts.details.find("`import sys` is a read-only view"), std::string::npos);
  EXPECT_NE(parts.details.find("`except ImportError:` fallback"), std::string::npos);
  EXPECT_NE(parts.details.find("Working directory: `/work`, fresh for each call: files written "
                               "there are gone after it."),
            std::string::npos)
      << parts.details;
  EXPECT_EQ(p->Instructions(false).find("Nothing persists"), std::string::npos);
  EXPECT_NE(p->Instructions(false).find("files persist only in the working directory"),
            std::string::npos);

  const std::string dir = TempDirPath("workdir");
  ASSERT_TRUE(p->AddMount({dir, kWorkingDirectoryMount}).ok());
  parts = p->DescribeRun(p->Snapshot());
  EXPECT_NE(parts.details.find("Working directory: `/work` (the run starts there): files "
                               "written there persist from call to call."),
            std::string::npos)
      << parts.details;
  // The process level starts the run in a scratch directory: the model is told the host path.
  fake->isolation_ = IsolationLevel::kProcess;
  parts = p->DescribeRun(p->Snapshot());
  EXPECT_NE(parts.details.find("Working directory: `" + dir + "` (write it by that path"),
            std::string::npos)
      << parts.details;
  std::filesystem::remove_all(dir);
}

TEST(ProviderTest, HostPathsHiddenWhereTheBackendDoesNotExposeThem) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  fake->isolation_ = IsolationLevel::kNamespaces;
  const std::string dir = TempDirPath("hidden");
  ASSERT_TRUE(p->AddMount({dir, "/out"}).ok());
  const std::string d = p->ToolDescription(p->Snapshot());
  EXPECT_NE(d.find("/out (read-write): use the path /out;"), std::string::npos) << d;
  EXPECT_EQ(d.find(dir), std::string::npos) << d;
  std::filesystem::remove_all(dir);
}

// The description's backend part is the executor's: files it adds, whether the snapshot's network
// targets are reachable, how each call starts. Nothing in it branches on the backend's name.
TEST(ProviderTest, TheDescriptionTakesTheBackendsPartFromItsExecutor) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  ASSERT_TRUE(p->AddNetworkTarget("api.example.com").ok());
  std::string d = p->ToolDescription(p->Snapshot());
  EXPECT_NE(d.find("Network: no network access is intended"), std::string::npos) << d;
  EXPECT_EQ(d.find("api.example.com"), std::string::npos)
      << "a backend without egress lists no hosts: " << d;
  EXPECT_EQ(d.find("Files:"), std::string::npos) << d;
  EXPECT_NE(d.find("State does not persist between calls: every call starts a fresh interpreter."),
            std::string::npos)
      << d;

  fake->traits_ = {false, true, "- /scratch (read-write): the backend's own\n",
                   "every call starts from a snapshot."};
  d = p->ToolDescription(p->Snapshot());
  EXPECT_NE(d.find("only these hosts are reachable: api.example.com"), std::string::npos) << d;
  EXPECT_NE(d.find("Files:\n- /scratch (read-write): the backend's own\n"), std::string::npos) << d;
  EXPECT_NE(d.find("State does not persist between calls: every call starts from a snapshot."),
            std::string::npos)
      << d;
}

// The provider stamps every result, once: the executor returns what only it knows, and the
// result names the executor's backend and level and the provider's measure of the time.
TEST(ProviderTest, TheProviderStampsWhereAndHowLongARunRan) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  fake->isolation_ = IsolationLevel::kNamespaces;
  fake->script = [](const ExecutionRequest&, const RunSnapshot&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a run that takes time
    ExecutionResult r;
    r.outcome = Outcome::kOk;
    return r;
  };
  const ExecutionResult ran = p->Execute("print(1)\n");
  EXPECT_EQ(ran.backend, "local");
  EXPECT_EQ(ran.isolation, "namespaces");
  EXPECT_GE(ran.duration_ms, 20);
  const ExecutionResult refused = p->Execute("");
  EXPECT_NE(refused.outcome, Outcome::kOk);
  EXPECT_EQ(refused.backend, "local");
  EXPECT_EQ(refused.isolation, "namespaces");
}

// A target is parsed once, when added: a malformed one is refused there with the reason, and the
// registry keeps the targets as written.
TEST(ProviderTest, NetworkTargetsAreParsedWhenAdded) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  const Status bad = p->AddNetworkTarget("api.example.com:FETCH");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("unknown HTTP method \"FETCH\""), std::string::npos)
      << bad.message();
  EXPECT_TRUE(p->ListNetworkTargets().empty());
  ASSERT_TRUE(p->AddNetworkTarget("http://B.example:8080:get").ok());
  ASSERT_TRUE(p->AddNetworkTarget("http://B.example:8080:get").ok());
  const RunSnapshot s = p->Snapshot();
  ASSERT_EQ(s.network_targets.size(), 1u);
  EXPECT_EQ(s.network_targets[0].text, "http://B.example:8080:get");
  EXPECT_EQ(s.network_targets[0].Display(), "http://b.example:8080 (GET)");
  EXPECT_TRUE(p->RemoveNetworkTarget("http://B.example:8080:get"));
  EXPECT_TRUE(p->Snapshot().network_targets.empty());
}

// A backend without egress gets no run with network targets: setup_error, never a silent drop.
TEST(ProviderTest, NetworkTargetsWithoutEgressAreRefused) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  ASSERT_TRUE(p->AddNetworkTarget("api.example.com").ok());
  const ExecutionResult r = p->Execute("print(1)\n");
  EXPECT_EQ(r.outcome, Outcome::kSetupError);
  EXPECT_NE(r.message.find("network targets (api.example.com) need egress"), std::string::npos)
      << r.message;
  EXPECT_EQ(fake->runs, 0);
}

// One truth about network: the run's policy carries the backend's network tools when the run
// has targets (the validator's hint names them), and none otherwise.
TEST(ProviderTest, TheValidatorHearsOfTheBackendsNetworkTools) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  fake->traits_.network_targets = true;
  fake->traits_.network_tools = {"http_get", "http_post"};
  EXPECT_TRUE(p->Snapshot().policy.network_tools.empty());  // no targets: no network
  ASSERT_TRUE(p->AddNetworkTarget("api.example.com").ok());
  EXPECT_EQ(p->Snapshot().policy.network_tools,
            (std::vector<std::string>{"http_get", "http_post"}));
  const ExecutionResult rejected = p->Execute("import socket\n");
  ASSERT_EQ(rejected.outcome, Outcome::kValidationFailed);
  ASSERT_FALSE(rejected.violations.empty());
  EXPECT_NE(rejected.violations[0].hint.find("`await http_get(url)`"), std::string::npos)
      << rejected.violations[0].hint;
  EXPECT_EQ(rejected.violations[0].hint.find("there is no network"), std::string::npos)
      << rejected.violations[0].hint;
  p->ClearNetworkTargets();
  const ExecutionResult without = p->Execute("import socket\n");
  ASSERT_FALSE(without.violations.empty());
  EXPECT_NE(without.violations[0].hint.find("there is no network"), std::string::npos)
      << without.violations[0].hint;
}

TEST(ProviderTest, ManyInvokesAtOnce) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  const ExecuteCodeFunction f(p);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        if (bj::parse(f.Invoke(R"j({"code":"print(1)"})j")).at("success").as_bool()) ++ok;
        EXPECT_TRUE(p->AddTool(Tool("t" + std::to_string(i))).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 160);
  EXPECT_EQ(fake->runs, 160);
}

// Counts its calls; refuses code that mentions "refuse".
class CountingValidator final : public Validator {
 public:
  ValidationReport Validate(std::string_view code, const ValidationPolicy&) override {
    ++calls;
    ValidationReport r;
    if (code.find("refuse") != std::string_view::npos) {
      r.ok = false;
      r.violations.push_back({1, 0, "name-blocked", "refused", "do not"});
    }
    return r;
  }
  StatusOr<std::vector<std::string>> AllowedImports(const ValidationPolicy&) override {
    return std::vector<std::string>{};
  }
  PythonVersion EmbeddedVersion() const override { return {3, 11}; }
  std::string InstallationInterpreter() const override { return "/usr/bin/python3.11"; }
  std::atomic<int> calls{0};
};

TEST(ProviderTest, AcceptedCodeIsValidatedOncePerPolicyAndRejectedCodeEveryTime) {
  auto executor = std::make_unique<FakeExecutor>();
  FakeExecutor* fake = executor.get();
  auto validator = std::make_shared<CountingValidator>();
  auto p = *CodeActProvider::Create({}, std::move(executor), validator);
  EXPECT_EQ(p->Execute("print(1)").outcome, Outcome::kOk);
  EXPECT_EQ(p->Execute("print(1)").outcome, Outcome::kOk);
  EXPECT_EQ(validator->calls, 1);  // the second came from the kept report
  EXPECT_EQ(p->Execute("print(2)").outcome, Outcome::kOk);
  EXPECT_EQ(validator->calls, 2);  // other code
  // A new tool changes the policy (its tool names): the same code is validated again.
  ASSERT_TRUE(p->AddTool(Tool("lookup")).ok());
  EXPECT_EQ(p->Execute("print(1)").outcome, Outcome::kOk);
  EXPECT_EQ(validator->calls, 3);
  // A rejection is never kept: each call asks the validator, and nothing runs.
  EXPECT_EQ(p->Execute("refuse()").outcome, Outcome::kValidationFailed);
  EXPECT_EQ(p->Execute("refuse()").outcome, Outcome::kValidationFailed);
  EXPECT_EQ(validator->calls, 5);
  EXPECT_EQ(fake->runs, 4);
  // Another provider keeps its own.
  auto other = *CodeActProvider::Create({}, std::make_unique<FakeExecutor>(), validator);
  EXPECT_EQ(other->Execute("print(1)").outcome, Outcome::kOk);
  EXPECT_EQ(validator->calls, 6);
}

TEST(ProviderTest, CodeThatIsNotUtf8IsAViolationNamingTheByte) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  ProviderOptions unvalidated;
  unvalidated.validate = false;  // the check holds without the validator too: the child takes text
  auto q = TestProvider::Make(unvalidated);
  for (auto* provider : {p.get(), q.get()}) {
    const ExecutionResult r = provider->Execute("print('ok')\nprint('\xC3')\n");
    EXPECT_EQ(r.outcome, Outcome::kValidationFailed);
    ASSERT_EQ(r.violations.size(), 1u);
    EXPECT_EQ(r.violations[0].rule, "source-encoding");
    EXPECT_EQ(r.violations[0].line, 2);
    EXPECT_EQ(r.violations[0].message,
              "byte 0xC3 at offset 19 (line 2, column 7) is not valid UTF-8");
  }
  EXPECT_EQ(fake->runs, 0);
}

TEST(ProviderTest, ACancelledInvocationRunsNothing) {
  FakeExecutor* fake = nullptr;
  auto p = TestProvider::Make({}, &fake);
  CancellationSource cancel;
  cancel.Cancel("the client cancelled the request");
  const ExecutionResult r = p->Execute("print(1)", InvokeOptions{.cancel = cancel.token()});
  EXPECT_EQ(r.outcome, Outcome::kCancelled);
  EXPECT_EQ(r.message, "cancelled: the client cancelled the request");
  EXPECT_FALSE(r.success());
  EXPECT_EQ(fake->runs, 0);
  EXPECT_EQ(bj::parse(ToJson(r)).at("outcome"), "cancelled");
  EXPECT_EQ(ExecutionResultFromJson(ToJson(r))->outcome, Outcome::kCancelled);
}

}  // namespace
}  // namespace codeact
