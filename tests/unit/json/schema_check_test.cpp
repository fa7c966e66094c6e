// The bridge's argument checker (src/json/schema_check.hpp) against the draft-7 cases in
// tests/fixtures/json_schema, and the messages a model reads.
#include "json/schema_check.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace codeact::internal {
namespace {

namespace json = boost::json;

json::value ReadFixture(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

TEST(SchemaCheckTest, EveryDraft7CaseOfTheFixtures) {
  const std::filesystem::path dir = std::filesystem::path(CODEACT_TEST_FIXTURES) / "json_schema";
  int files = 0;
  int cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const json::value groups = ReadFixture(entry.path());
    for (const auto& group : groups.as_array()) {
      const std::string schema = json::serialize(group.at("schema"));
      for (const auto& test : group.at("tests").as_array()) {
        ++cases;
        const bool valid = test.at("valid").as_bool();
        const auto problem = CheckArguments(schema, test.at("data"));
        EXPECT_EQ(!problem.has_value(), valid)
            << entry.path().filename() << ": " << group.at("description").as_string() << " / "
            << test.at("description").as_string() << (problem ? ": " + problem->message : "");
        if (problem) EXPECT_EQ(problem->error_type, "ToolArgumentsInvalid");
      }
    }
  }
  EXPECT_GE(files, 6);
  EXPECT_GE(cases, 100);
}

TEST(SchemaCheckTest, TheMessageNamesTheField) {
  const std::string schema =
      R"({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},)"
      R"("items":{"type":"array","items":{"type":"integer"}}},"required":["a","b"]})";
  auto problem = CheckArguments(schema, json::parse(R"({"a":"x","b":2})"));
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->message.rfind("argument \"a\": ", 0), 0u) << problem->message;

  problem = CheckArguments(schema, json::parse(R"({"a":1})"));
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->message.find("'b'"), std::string::npos) << problem->message;

  problem = CheckArguments(schema, json::parse(R"({"a":1,"b":2,"items":[1,"two"]})"));
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->message.find("argument \"items[1]\""), std::string::npos) << problem->message;
}

TEST(SchemaCheckTest, ABrokenSchemaFailsEveryCallInsteadOfLettingArgumentsThrough) {
  for (const char* schema : {R"({"type":"object",)",
                             R"({"type":"object","properties":{"a":)"
                             R"({"$ref":"https://example.com/a.json"}}})",
                             R"({"type":7})"}) {
    const auto problem = CheckArguments(schema, json::parse(R"({"a":1})"));
    ASSERT_TRUE(problem.has_value()) << schema;
    EXPECT_EQ(problem->error_type, "ToolSchemaInvalid") << schema;
  }
}

TEST(SchemaCheckTest, NoDeclaredSchemaChecksNothing) {
  EXPECT_FALSE(CheckArguments("", json::parse(R"({"a":[1,{"b":null}]})")).has_value());
  EXPECT_FALSE(CheckArguments(" \n", json::parse(R"({})")).has_value());
}

TEST(SchemaCheckTest, ALongStringUnderAPatternIsRefusedNotMatched) {
  const std::string schema =
      R"({"type":"object","properties":{"s":{"type":"string","pattern":"^(a|b)*$"}}})";
  EXPECT_FALSE(CheckArguments(schema, json::object{{"s", std::string(1000, 'a')}}).has_value());
  const auto problem =
      CheckArguments(schema, json::object{{"s", std::string(kMaxPatternCheckedBytes + 1, 'a')}});
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->message.find("too long to check against the schema's pattern"),
            std::string::npos);
  // Without a pattern a long string is checked as usual.
  EXPECT_FALSE(CheckArguments(R"({"type":"object","properties":{"s":{"type":"string"}}})",
                              json::object{{"s", std::string(1 << 20, 'a')}})
                   .has_value());
}

}  // namespace
}  // namespace codeact::internal
