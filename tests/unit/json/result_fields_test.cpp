#include "json/result_fields.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "codeact/json.hpp"
#include "json/result_size.hpp"
#include "json/tool_formats.hpp"

namespace codeact::internal {
namespace {

namespace json = boost::json;

ExecutionResult Full() {
  ExecutionResult r;
  r.outcome = Outcome::kError;
  r.exit_code = 1;
  r.stdout_text = "out\n\x01";
  r.stderr_text = "err \xff";
  r.output_present = true;
  r.output_json = R"({"a":[1,2.5,null]})";
  r.error = UserError{"ValueError", "bad \"x\"", "Traceback ..."};
  r.violations.push_back({3, 4, "import-blocked", "no", "hint"});
  r.files.push_back({"/out/a.csv", "text/csv", 3, "a,b"});
  r.omitted_files.push_back({"/out/big", "too big"});
  r.tool_calls = 2;
  r.duration_ms = 17;
  r.backend = "local";
  r.isolation = "process";
  r.interpreter = "/usr/bin/python3";
  r.message = "a note";
  r.usage.cpu_ms = 5;
  r.session = "s";
  r.session_state = SessionState::kKept;
  return r;
}

// The result JSON is the table, in its order: a field is a row, and only a row.
TEST(ResultFieldsTest, ToJsonWritesTheRowsInOrder) {
  const json::object o = json::parse(ToJson(Full())).as_object();
  ASSERT_EQ(o.size(), ResultFieldTable().size());
  std::size_t i = 0;
  for (const auto& [key, value] : o) EXPECT_EQ(key, ResultFieldTable()[i++].name);
}

TEST(ResultFieldsTest, TheOutputSchemaHasEveryRow) {
  const json::object schema = json::parse(ExecutionResultSchemaJson()).as_object();
  const json::object& properties = schema.at("properties").as_object();
  json::array required;
  for (const ResultField& field : ResultFieldTable()) {
    EXPECT_TRUE(properties.contains(field.name)) << field.name;
    if (field.schema_required) required.emplace_back(field.name);
  }
  EXPECT_EQ(properties.size(), ResultFieldTable().size());
  EXPECT_EQ(schema.at("required"), required);
}

TEST(ResultFieldsTest, ReadBackGivesTheSameJson) {
  const std::string text = ToJson(Full());
  auto back = ExecutionResultFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToJson(*back), text);
  EXPECT_FALSE(ExecutionResultFromJson(R"({"stdout":"x"})").ok());
}

TEST(ResultFieldsTest, SizesComeFromTheRows) {
  for (const ExecutionResult& r :
       {Full(), ExecutionResult{}, NotRunResult(Outcome::kTimeout, "")}) {
    const std::size_t exact = ToJson(r).size();
    EXPECT_EQ(ResultJsonBytes(r), exact);
    EXPECT_GE(ResultJsonBytesUpperBound(r), exact);
  }
}

}  // namespace
}  // namespace codeact::internal
