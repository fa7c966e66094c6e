// execute_code in every definition format, and the strict form of tool schemas
// (src/json/tool_formats.hpp).
#include "json/tool_formats.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "codeact/json.hpp"
#include "json/definitions.hpp"
#include "json/schema_check.hpp"

namespace codeact::internal {
namespace {

namespace json = boost::json;

json::value Strict(const std::string& schema) {
  auto strict = StrictSchemaJson(schema);
  EXPECT_TRUE(strict.ok()) << strict.status().message();
  return strict.ok() ? json::parse(*strict) : json::value();
}

TEST(ToolFormatsTest, OptionalFieldsBecomeRequiredAndNullable) {
  const json::value s = Strict(
      R"({"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"},)"
      R"("mode":{"type":"string","enum":["a","b"]},"any":{"description":"whatever"},)"
      R"("opts":{"type":"object","properties":{"deep":{"type":"boolean"}}}},"required":["q"]})");
  EXPECT_EQ(s.at("additionalProperties"), false);
  EXPECT_EQ(s.at("required"), json::parse(R"(["q","n","mode","any","opts"])"));
  EXPECT_EQ(s.at("properties").at("q"), json::parse(R"({"type":"string"})"));
  EXPECT_EQ(s.at("properties").at("n").at("type"), json::parse(R"(["integer","null"])"));
  EXPECT_EQ(s.at("properties").at("mode").at("enum"), json::parse(R"(["a","b",null])"));
  EXPECT_EQ(s.at("properties").at("any"),
            json::parse(R"({"description":"whatever","anyOf":[{"description":"whatever"},)"
                        R"({"type":"null"}]})"));
  const json::value& opts = s.at("properties").at("opts");
  EXPECT_EQ(opts.at("type"), json::parse(R"(["object","null"])"));
  EXPECT_EQ(opts.at("additionalProperties"), false);
  EXPECT_EQ(opts.at("required"), json::parse(R"(["deep"])"));
  EXPECT_EQ(opts.at("properties").at("deep").at("type"), json::parse(R"(["boolean","null"])"));
}

TEST(ToolFormatsTest, SchemasWithoutAStrictFormAreSaidSo) {
  for (const char* schema :
       {R"({"type":"object"})", R"({"type":"object","properties":{},"additionalProperties":true})",
        R"({"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}}})",
        R"({"type":"object","properties":{"a":{"$ref":"#/definitions/x"}}})", R"([1])"}) {
    EXPECT_FALSE(StrictSchemaJson(schema).ok()) << schema;
  }
  auto definition =
      ToolDefinitionJson(DefinitionFormat::kOpenAI, ToolSpec{"t", "d", R"({"type":"object"})", ""});
  ASSERT_TRUE(definition.ok());
  const json::value v = json::parse(*definition);
  EXPECT_EQ(v.at("function").at("strict"), false);
  EXPECT_EQ(v.at("function").at("parameters"), json::parse(R"({"type":"object"})"));
}

TEST(ToolFormatsTest, ExecuteCodeInEachFormat) {
  const json::value chat =
      json::parse(ExecuteCodeDefinitionJson(DefinitionFormat::kOpenAI, "run code"));
  EXPECT_EQ(chat.at("type"), "function");
  EXPECT_EQ(chat.at("function").at("name"), "execute_code");
  EXPECT_EQ(chat.at("function").at("description"), "run code");
  EXPECT_EQ(chat.at("function").at("strict"), true);
  EXPECT_EQ(chat.at("function").at("parameters").at("required"), json::parse(R"(["code"])"));
  EXPECT_EQ(chat.at("function").at("parameters").at("additionalProperties"), false);

  const json::value responses =
      json::parse(ExecuteCodeDefinitionJson(DefinitionFormat::kOpenAIResponses, "run code"));
  EXPECT_EQ(responses.at("type"), "function");
  EXPECT_EQ(responses.at("name"), "execute_code");
  EXPECT_EQ(responses.at("strict"), true);
  EXPECT_EQ(responses.at("parameters"), chat.at("function").at("parameters"));
  EXPECT_FALSE(responses.as_object().contains("function"));

  const json::value anthropic =
      json::parse(ExecuteCodeDefinitionJson(DefinitionFormat::kAnthropic, "run code"));
  EXPECT_EQ(anthropic.at("name"), "execute_code");
  EXPECT_EQ(anthropic.at("description"), "run code");
  EXPECT_EQ(anthropic.at("input_schema"), chat.at("function").at("parameters"));
  EXPECT_EQ(anthropic.at("strict"), true);
  EXPECT_FALSE(anthropic.as_object().contains("type"));

  const json::value mcp = json::parse(ExecuteCodeDefinitionJson(DefinitionFormat::kMcp, "run"));
  EXPECT_EQ(mcp.at("name"), "execute_code");
  EXPECT_EQ(mcp.at("inputSchema").at("required"), json::parse(R"(["code"])"));
  EXPECT_FALSE(mcp.as_object().contains("strict"));
  const json::value& output = mcp.at("outputSchema");
  EXPECT_EQ(output.at("type"), "object");
  for (const char* field : {"stdout", "stderr", "success", "outcome", "exit_code", "output",
                            "violations", "files", "tool_calls", "error"}) {
    EXPECT_TRUE(output.at("properties").as_object().contains(field)) << field;
  }
}

// MCP clients check structuredContent against outputSchema: every kind of result must pass.
TEST(ToolFormatsTest, ResultsMatchTheOutputSchema) {
  ExecutionResult ok;
  ok.outcome = Outcome::kOk;
  ok.exit_code = 0;
  ok.stdout_text = "hi\n";
  ok.output_present = true;
  ok.output_json = R"({"a":[1,2.5,null]})";
  ok.files.push_back({"/out/a.csv", "text/csv", 3, "a,b"});
  ok.usage.cpu_ms = 12;
  ExecutionResult failed = NotRunResult(Outcome::kValidationFailed, "rejected");
  failed.violations.push_back({1, 0, "import-blocked", "no", "hint"});
  ExecutionResult raised;
  raised.outcome = Outcome::kError;
  raised.exit_code = 1;
  raised.error = UserError{"ValueError", "bad", "Traceback ..."};
  raised.omitted_files.push_back({"/out/big", "too big"});
  for (const ExecutionResult& r : {ok, failed, raised}) {
    const auto problem = CheckArguments(ExecutionResultSchemaJson(), json::parse(ToJson(r)));
    EXPECT_FALSE(problem.has_value()) << ToJson(r) << ": " << problem->message;
  }
  EXPECT_TRUE(CheckArguments(ExecutionResultSchemaJson(), json::parse(R"({"stdout":1})")));
}

TEST(ToolFormatsTest, FormatNamesRoundTrip) {
  for (auto format : {DefinitionFormat::kOpenAI, DefinitionFormat::kOpenAIResponses,
                      DefinitionFormat::kAnthropic, DefinitionFormat::kMcp}) {
    EXPECT_EQ(ParseDefinitionFormat(DefinitionFormatName(format)), format);
  }
  EXPECT_EQ(DefinitionFormatName(DefinitionFormat::kOpenAIResponses), "openai-responses");
  EXPECT_FALSE(ParseDefinitionFormat("claude").has_value());
}

}  // namespace
}  // namespace codeact::internal
