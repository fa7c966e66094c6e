// The embedded path: the package through pybind11, bounds, time limit and threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "codeact/validator.hpp"

namespace codeact {
namespace {

std::shared_ptr<Validator> Get() {
  auto v = Validator::Embedded();
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : nullptr;
}

bool HasRule(const ValidationReport& r, const std::string& rule) {
  for (const auto& v : r.violations) {
    if (v.rule == rule) return true;
  }
  return false;
}

constexpr const char* kBenign = R"(import json
import statistics
from dataclasses import dataclass

@dataclass
class Point:
    x: float
    y: float

    def __add__(self, other):
        return Point(self.x + other.x, self.y + other.y)

points = [Point(i, i * 2.0) for i in range(10)]
total = points[0]
for p in points[1:]:
    total = total + p
print(json.dumps({"mean": statistics.mean(p.y for p in points), "x": total.x}))
result = await call_tool("add", a=1, b=2)
total.x
)";

TEST(EmbeddedValidatorTest, AcceptsOrdinaryCode) {
  auto v = Get();
  ASSERT_TRUE(v);
  const ValidationReport r = v->Validate(kBenign, {});
  EXPECT_TRUE(r.ok) << (r.violations.empty()
                            ? ""
                            : r.violations[0].rule + ": " + r.violations[0].message);
  EXPECT_TRUE(r.violations.empty());
}

TEST(EmbeddedValidatorTest, RejectsOsSystemWithLocation) {
  auto v = Get();
  ASSERT_TRUE(v);
  const ValidationReport r = v->Validate("import os\nos.system('id')\n", {});
  ASSERT_FALSE(r.ok);
  ASSERT_FALSE(r.violations.empty());
  EXPECT_EQ(r.violations[0].line, 2);
  EXPECT_EQ(r.violations[0].rule, "os-attribute");
  EXPECT_NE(r.violations[0].message.find("os.system"), std::string::npos);
  EXPECT_FALSE(r.violations[0].hint.empty());
}

TEST(EmbeddedValidatorTest, RejectsTheClassicEscapes) {
  auto v = Get();
  ASSERT_TRUE(v);
  EXPECT_TRUE(HasRule(v->Validate("import subprocess\n", {}), "import-blocked"));
  EXPECT_TRUE(HasRule(v->Validate("f = eval\n", {}), "builtin-blocked"));
  EXPECT_TRUE(
      HasRule(v->Validate("().__class__.__bases__[0].__subclasses__()\n", {}), "attribute-dunder"));
  EXPECT_TRUE(
      HasRule(v->Validate("import datetime\ndatetime.sys\n", {}), "attribute-module-pivot"));
  EXPECT_TRUE(HasRule(v->Validate("'{0.__class__}'.format(1)\n", {}), "format-attribute"));
}

TEST(EmbeddedValidatorTest, BoundsAreViolationsNotCrashes) {
  auto v = Get();
  ASSERT_TRUE(v);
  ValidationPolicy policy;
  policy.max_code_bytes = 100;
  EXPECT_TRUE(HasRule(v->Validate(std::string(200, '#'), policy), "code-too-large"));
  std::string deep = "x = " + std::string(150, '[') + std::string(150, ']') + "\n";
  EXPECT_FALSE(v->Validate(deep, {}).ok);
  EXPECT_TRUE(HasRule(v->Validate("def f(:\n", {}), "syntax-error"));
  EXPECT_TRUE(HasRule(v->Validate(std::string("x = 1\0", 6), {}), "syntax-error"));
  // Invalid UTF-8 never reaches Python as a crash.
  EXPECT_FALSE(v->Validate("x = '\xff'\n", {}).ok);
}

TEST(EmbeddedValidatorTest, PolicyListsReplaceAndAdjust) {
  auto v = Get();
  ASSERT_TRUE(v);
  ValidationPolicy only_math;
  only_math.allowed_imports = std::vector<std::string>{"math"};
  EXPECT_TRUE(v->Validate("import math\n", only_math).ok);
  EXPECT_TRUE(HasRule(v->Validate("import json\n", only_math), "import-blocked"));
  ValidationPolicy no_json;
  no_json.extra_blocked_imports = {"json"};
  EXPECT_TRUE(HasRule(v->Validate("import json\n", no_json), "import-blocked"));
}

// The runtime guard's import patterns come from the same policy (validator/runtime_policy.py).
TEST(EmbeddedValidatorTest, AllowedImportsAreThePolicysPatterns) {
  auto v = Get();
  ASSERT_TRUE(v);
  ValidationPolicy policy;
  policy.allowed_imports = std::vector<std::string>{"math", "xml.*"};
  policy.extra_blocked_imports = {"xml.dom"};
  auto patterns = v->AllowedImports(policy);
  ASSERT_TRUE(patterns.ok()) << patterns.status().ToString();
  // Names the policy allows, then a "!" pattern for every module it refuses (a refused module is a
  // PermissionError; a name no pattern covers is ModuleNotFoundError).
  std::vector<std::string> allowed, refused;
  for (const std::string& p : *patterns) (p.starts_with("!") ? refused : allowed).push_back(p);
  EXPECT_EQ(allowed, (std::vector<std::string>{"__future__", "math", "xml.*"}));
  EXPECT_NE(std::find(refused.begin(), refused.end(), "!xml.dom"), refused.end());
  EXPECT_NE(std::find(refused.begin(), refused.end(), "!ctypes"), refused.end());
  auto again = v->AllowedImports(policy);  // from the cache, equal
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *patterns);
  auto defaults = v->AllowedImports(ValidationPolicy{});
  ASSERT_TRUE(defaults.ok());
  EXPECT_NE(std::find(defaults->begin(), defaults->end(), "json"), defaults->end());
  EXPECT_EQ(std::find(defaults->begin(), defaults->end(), "socket"), defaults->end());
}

TEST(EmbeddedValidatorTest, TimeLimitIsAViolation) {
  auto v = Get();
  ASSERT_TRUE(v);
  std::string big;
  for (int i = 0; big.size() < 60'000; ++i)
    big += "v" + std::to_string(i) + " = [a.b(c, d=e) for a in f if g]\n";
  ValidationPolicy policy;
  policy.validation_timeout_ms = 1;
  const ValidationReport r = v->Validate(big, policy);
  EXPECT_TRUE(HasRule(r, "validation-timeout"));
  // The interpreter is still healthy afterwards and no stray exception leaks into later calls.
  EXPECT_TRUE(v->Validate("x = 1\n", {}).ok);
  EXPECT_TRUE(v->Validate(kBenign, {}).ok);
}

TEST(EmbeddedValidatorTest, EightThreadsGetTheSameReports) {
  auto v = Get();
  ASSERT_TRUE(v);
  const std::vector<std::string> programs = {kBenign,           "import os\nos.fork()\n",
                                             "f = exec\n",      "x.__globals__\n",
                                             "import socket\n", "print(1)\n"};
  std::vector<std::string> expected;
  for (const auto& p : programs) {
    const auto r = v->Validate(p, {});
    expected.push_back(std::to_string(r.ok) + (r.violations.empty() ? "" : r.violations[0].rule));
  }
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        for (std::size_t i = 0; i < programs.size(); ++i) {
          const auto r = v->Validate(programs[i], {});
          const std::string got =
              std::to_string(r.ok) + (r.violations.empty() ? "" : r.violations[0].rule);
          if (got != expected[i]) ++mismatches[t];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(EmbeddedValidatorTest, KnowsItsInterpreter) {
  auto v = Get();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->EmbeddedVersion().major, 3);
  EXPECT_EQ(v->EmbeddedVersion().minor, 11);
  EXPECT_EQ(v->InstallationInterpreter(), "/usr/bin/python3.11");
}

}  // namespace
}  // namespace codeact
