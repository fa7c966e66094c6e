#include "codeact/json.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "common/utf8.hpp"
#include "json/base64.hpp"
#include "json/raw_json.hpp"
#include "json/serialize.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;

TEST(Base64Test, RoundTripsAllLengths) {
  std::string bytes;
  for (int n = 0; n < 300; ++n) {
    const std::string encoded = internal::Base64Encode(bytes);
    EXPECT_EQ(encoded.size() % 4, 0u);
    auto decoded = internal::Base64Decode(encoded);
    ASSERT_TRUE(decoded.has_value()) << n;
    EXPECT_EQ(*decoded, bytes);
    bytes.push_back(static_cast<char>(n * 37));
  }
  EXPECT_EQ(internal::Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(internal::Base64Encode("fo"), "Zm8=");
  EXPECT_FALSE(internal::Base64Decode("Zm9").has_value());
  EXPECT_FALSE(internal::Base64Decode("Z=9v").has_value());
}

TEST(Utf8Test, ReplacesInvalidSequencesOnly) {
  EXPECT_EQ(internal::SanitizeUtf8("héllo ✓ 𝄞"), "héllo ✓ 𝄞");
  EXPECT_EQ(internal::SanitizeUtf8("a\xff"
                                   "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(internal::SanitizeUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  EXPECT_EQ(internal::SanitizeUtf8("\xED\xA0\x80"),
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");                              // surrogate
  EXPECT_EQ(internal::SanitizeUtf8("ok\xE2\x9C"), "ok\xEF\xBF\xBD\xEF\xBF\xBD");  // cut at the cap
}

TEST(JsonTest, ValidationReportShape) {
  ValidationReport report{false,
                          {{3, 4, "import-blocked", "import of subprocess", "use call_tool"}}};
  const bj::value v = bj::parse(ToJson(report));
  EXPECT_EQ(v.at("ok").as_bool(), false);
  const auto& viol = v.at("violations").as_array().at(0);
  EXPECT_EQ(viol.at("line").as_int64(), 3);
  EXPECT_EQ(viol.at("col").as_int64(), 4);
  EXPECT_EQ(viol.at("rule").as_string(), "import-blocked");
  EXPECT_EQ(viol.at("hint").as_string(), "use call_tool");
}

TEST(JsonTest, ExecutionResultRoundTripKeepsEveryField) {
  ExecutionResult r;
  r.stdout_text = "hi\n";
  r.stderr_text = "bad \xff byte";
  r.stdout_truncated = true;
  r.exit_code = 1;
  r.outcome = Outcome::kError;
  r.output_present = true;
  r.output_json = R"({"a":[1,2,null]})";
  r.error = UserError{"ValueError", "nope", "Traceback ..."};
  r.files.push_back({"/out/a.bin", "application/octet-stream", 3, std::string("\0\1\2", 3)});
  r.omitted_files.push_back({"/out/link", "symlink not followed"});
  r.tool_calls = 7;
  r.duration_ms = 12;
  r.backend = "local";
  r.isolation = "process";
  r.usage.cpu_ms = 42;
  r.usage.peak_memory_bytes = 12LL << 20;

  const std::string text = ToJson(r);
  const bj::value v = bj::parse(text);
  EXPECT_EQ(v.at("success").as_bool(), false);
  EXPECT_EQ(v.at("outcome").as_string(), "error");
  EXPECT_EQ(v.at("stderr").as_string(), "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(v.at("output").at("a").as_array().size(), 3u);
  EXPECT_EQ(v.at("files").as_array().at(0).at("data_base64").as_string(), "AAEC");
  EXPECT_EQ(v.at("usage").at("cpu_ms").as_int64(), 42);
  EXPECT_EQ(v.at("usage").at("peak_memory_bytes").as_int64(), 12LL << 20);
  EXPECT_TRUE(v.at("usage").at("workdir_bytes").is_null());  // not measured: null, not 0

  auto back = ExecutionResultFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->stdout_text, r.stdout_text);
  EXPECT_TRUE(back->stdout_truncated);
  EXPECT_EQ(back->outcome, Outcome::kError);
  EXPECT_EQ(back->output_json, r.output_json);
  ASSERT_TRUE(back->error.has_value());
  EXPECT_EQ(back->error->type, "ValueError");
  ASSERT_EQ(back->files.size(), 1u);
  EXPECT_EQ(back->files[0].data, std::string("\0\1\2", 3));
  EXPECT_EQ(back->omitted_files.at(0).reason, "symlink not followed");
  EXPECT_EQ(back->tool_calls, 7);
  EXPECT_EQ(back->usage.cpu_ms, 42);
  EXPECT_EQ(back->usage.peak_memory_bytes, 12LL << 20);
  EXPECT_FALSE(back->usage.workdir_bytes.has_value());
}

TEST(JsonTest, SuccessNeedsExitZeroAndOk) {
  ExecutionResult r;
  r.exit_code = 0;
  r.outcome = Outcome::kOk;
  EXPECT_TRUE(r.success());
  r.outcome = Outcome::kTimeout;
  EXPECT_FALSE(r.success());
  EXPECT_EQ(bj::parse(ToJson(r)).at("output"), nullptr);  // not present -> null
}

TEST(JsonTest, PolicyParsesEveryKeyAndRejectsTypos) {
  auto p = PolicyFromJson(R"({"allowed_imports":["math"],"extra_blocked_imports":["json"],
                              "allow_dynamic_format":true,"max_code_bytes":100,"max_ast_depth":20})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(p->allowed_imports.has_value());
  EXPECT_EQ(p->allowed_imports->at(0), "math");
  EXPECT_EQ(p->extra_blocked_imports.at(0), "json");
  EXPECT_TRUE(p->allow_dynamic_format);
  EXPECT_EQ(p->max_code_bytes, 100);
  EXPECT_EQ(p->max_ast_depth, 20);
  EXPECT_FALSE(p->blocked_builtins.has_value());

  EXPECT_EQ(PolicyFromJson(R"({"alowed_imports":[]})").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PolicyFromJson(R"({"allowed_imports":"math"})").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PolicyFromJson(R"({"max_code_bytes":-1})").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PolicyFromJson("[1,2").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PolicyFromJson("[]").status().code(), StatusCode::kInvalidArgument);

  auto again = PolicyFromJson(ToJson(*p));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again->allowed_imports, *p->allowed_imports);
}

// Boost.JSON makes an integer past 64 bits a double; the raw text keeps its digits.
TEST(RawJsonTest, RawMemberIsTheValueAsWritten) {
  const std::string line =
      R"({"jsonrpc":"2.0", "params":{"id":5,"requestId": 18446744073709551616},)"
      R"( "id" : 123456789012345678901234567890 ,"method":"x"})";
  auto id = internal::RawMember(line, "id");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(*id, "123456789012345678901234567890");  // the top-level one, not params.id
  auto params = internal::RawMember(line, "params");
  ASSERT_TRUE(params.has_value());
  EXPECT_EQ(internal::RawMember(*params, "requestId").value_or(""), "18446744073709551616");
  EXPECT_EQ(internal::RawMember(R"({"id":"a\"}b","x":1})", "id").value_or(""), R"("a\"}b")");
  EXPECT_EQ(internal::RawMember(R"({"\u0069d":-0.5e3})", "id").value_or(""),
            "-0.5e3");  // an escaped key
  EXPECT_EQ(internal::RawMember(R"({"id":1,"id":2})", "id").value_or(""),
            "2");  // the parser keeps the last
  EXPECT_EQ(bj::parse(R"({"id":1,"id":2})").at("id"), 2);
  EXPECT_FALSE(internal::RawMember(R"({"idx":1,"nested":{"id":2}})", "id").has_value());
  EXPECT_FALSE(internal::RawMember("[1,2]", "id").has_value());
}

TEST(RawJsonTest, RawArrayElementsSplitsABatch) {
  const auto elements = internal::RawArrayElements(R"( [ {"a":[1,"]"]} , 2,"x,y" ,null,[[]] ] )");
  ASSERT_EQ(elements.size(), 5u);
  EXPECT_EQ(elements[0], R"({"a":[1,"]"]})");
  EXPECT_EQ(elements[1], "2");
  EXPECT_EQ(elements[2], R"("x,y")");
  EXPECT_EQ(elements[3], "null");
  EXPECT_EQ(elements[4], "[[]]");
  EXPECT_TRUE(internal::RawArrayElements("[]").empty());
  EXPECT_TRUE(internal::RawArrayElements(R"({"a":1})").empty());
}

TEST(ParseJsonTest, NestingIsBoundedAndNamed) {
  std::string deep = "0";
  for (int i = 0; i < 100; ++i) deep = "[" + deep + "]";
  bj::error_code ec;
  internal::ParseJson(deep, ec);
  EXPECT_FALSE(ec) << "100 levels are within the bound";
  deep = "[" + std::string(200, '[') + std::string(200, ']') + "]";
  internal::ParseJson(deep, ec);
  ASSERT_TRUE(ec);
  EXPECT_EQ(internal::JsonErrorText(ec), "nested deeper than 128 levels");
}

}  // namespace
}  // namespace codeact
