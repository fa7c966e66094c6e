// The content of an execute_code result over MCP (src/mcp_server/mcp_result.hpp): the result JSON
// as text, trimmed with a summary when large, and files as embedded resources.
#include "mcp_server/mcp_result.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "codeact/json.hpp"

namespace codeact::internal {
namespace {

namespace json = boost::json;

TEST(McpResultTest, TheTextIsTheResultJsonWithFilesAsResources) {
  ExecutionResult r;
  r.outcome = Outcome::kOk;
  r.exit_code = 0;
  r.stdout_text = "done\n";
  r.files.push_back({"/out/report one.csv", "text/csv", 7, "a,b\n1,2"});
  r.files.push_back({"/out/img.png", "image/png", 4, std::string("\x89PNG", 4)});
  const std::string result_json = ToJson(r);
  const json::array content = McpResultContent(r, result_json, kDefaultMaxTextContentBytes);
  ASSERT_EQ(content.size(), 3u);
  EXPECT_EQ(content[0].at("type"), "text");
  const json::value text = json::parse(content[0].at("text").as_string());
  json::value expected = json::parse(result_json);
  for (auto& f : expected.at("files").as_array()) {
    f.as_object().erase("data_base64");
    f.as_object()["resource"] = FileUri(std::string(f.at("path").as_string()));
  }
  EXPECT_EQ(text, expected);
  EXPECT_EQ(content[0].at("text").as_string().find("data_base64"), json::string::npos);
  EXPECT_EQ(text.at("files").at(0).at("resource"), "file:///out/report%20one.csv");

  EXPECT_EQ(content[1].at("type"), "resource");
  EXPECT_EQ(content[1].at("resource").at("uri"), "file:///out/report%20one.csv");
  EXPECT_EQ(content[1].at("resource").at("mimeType"), "text/csv");
  EXPECT_EQ(content[1].at("resource").at("text"), "a,b\n1,2");
  EXPECT_EQ(content[2].at("resource").at("mimeType"), "image/png");
  EXPECT_EQ(content[2].at("resource").at("blob"), "iVBORw==");
  EXPECT_FALSE(content[2].at("resource").as_object().contains("text"));
}

TEST(McpResultTest, AnEmptySuccessfulRunSaysSoInTheTextOnly) {
  ExecutionResult r;
  r.outcome = Outcome::kOk;
  r.exit_code = 0;
  const std::string result_json = ToJson(r);
  const json::array content = McpResultContent(r, result_json, kDefaultMaxTextContentBytes);
  ASSERT_EQ(content.size(), 1u);
  const json::value text = json::parse(content[0].at("text").as_string());
  EXPECT_EQ(text.at("summary"), "Code executed successfully without output.");
  EXPECT_EQ(result_json.find("summary"), std::string::npos);  // the result JSON is unchanged
  // Anything to show, or a failure, and there is no such summary.
  ExecutionResult printed = r;
  printed.stdout_text = "x\n";
  ExecutionResult failed = r;
  failed.outcome = Outcome::kError;
  failed.exit_code = 1;
  for (const ExecutionResult& other : {printed, failed}) {
    const json::array c = McpResultContent(other, ToJson(other), kDefaultMaxTextContentBytes);
    EXPECT_FALSE(json::parse(c[0].at("text").as_string()).as_object().contains("summary"));
  }
}

TEST(McpResultTest, ALargeResultIsTrimmedWithASummary) {
  ExecutionResult r;
  r.outcome = Outcome::kOk;
  r.exit_code = 0;
  r.stdout_text = "first line\n" + std::string(1 << 20, 'x') + "\nlast line\n";
  r.output_present = true;
  r.output_json = "[12345";
  for (int i = 0; i < 2000; ++i) r.output_json += ",12345";
  r.output_json += "]";
  const std::string result_json = ToJson(r);
  const json::array content = McpResultContent(r, result_json, kDefaultMaxTextContentBytes);
  const std::string raw(content[0].at("text").as_string());
  EXPECT_LT(raw.size(), 16u * 1024) << "trimmed well below the 1 MiB of stdout";
  const json::value text = json::parse(raw);
  const std::string summary(text.at("summary").as_string());
  EXPECT_NE(summary.find("trimmed (stdout, output"), std::string::npos) << summary;
  EXPECT_NE(summary.find("structuredContent holds the whole result"), std::string::npos);
  const std::string out(text.at("stdout").as_string());
  EXPECT_EQ(out.rfind("first line\n", 0), 0u);
  EXPECT_TRUE(out.ends_with("\nlast line\n"));
  EXPECT_NE(out.find(" bytes trimmed ...]"), std::string::npos);
  EXPECT_TRUE(text.at("output").is_string());
  EXPECT_EQ(text.at("outcome"), "ok");
  // A small result is not touched.
  ExecutionResult small;
  small.stdout_text = "hi\n";
  const json::array plain = McpResultContent(small, ToJson(small), kDefaultMaxTextContentBytes);
  EXPECT_EQ(json::parse(plain[0].at("text").as_string()), json::parse(ToJson(small)));
}

}  // namespace
}  // namespace codeact::internal
