// The content of an execute_code result over MCP (src/mcp_server/mcp_result.hpp): the result JSON
// as text, trimmed with a summary when large, images as image blocks, other files as links to
// kept files (or embedded resources without a store).
#include "mcp_server/mcp_result.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "codeact/json.hpp"

namespace codeact::internal {
namespace {

namespace json = boost::json;

constexpr char kPng[] = "\x89PNG\r\n\x1a\n";

TEST(McpResultTest, WithoutAStoreFilesAreEmbeddedResourcesAndImagesImageBlocks) {
  ExecutionResult r;
  r.outcome = Outcome::kOk;
  r.exit_code = 0;
  r.stdout_text = "done\n";
  r.files.push_back({"/out/report one.csv", "text/csv", 7, "a,b\n1,2"});
  // Named .bin: the bytes, not the name, make it an image.
  r.files.push_back({"/out/img.bin", "application/octet-stream", 8, std::string(kPng, 8)});
  const std::string result_json = ToJson(r);
  const json::array content = McpResultContent(r, result_json, kDefaultMaxTextContentBytes);
  ASSERT_EQ(content.size(), 3u);
  EXPECT_EQ(content[0].at("type"), "text");
  const json::value text = json::parse(content[0].at("text").as_string());
  json::value expected = json::parse(result_json);
  json::array& files = expected.at("files").as_array();
  for (auto& f : files) f.as_object().erase("data_base64");
  files[0].as_object()["resource"] = FileUri("/out/report one.csv");
  files[1].as_object()["shown_as"] = "image";
  EXPECT_EQ(text, expected);
  EXPECT_EQ(content[0].at("text").as_string().find("data_base64"), json::string::npos);
  EXPECT_EQ(text.at("files").at(0).at("resource"), "file:///out/report%20one.csv");

  EXPECT_EQ(content[1].at("type"), "resource");
  EXPECT_EQ(content[1].at("resource").at("uri"), "file:///out/report%20one.csv");
  EXPECT_EQ(content[1].at("resource").at("mimeType"), "text/csv");
  EXPECT_EQ(content[1].at("resource").at("text"), "a,b\n1,2");
  EXPECT_EQ(content[2].at("type"), "image");
  EXPECT_EQ(content[2].at("mimeType"), "image/png");
  EXPECT_EQ(content[2].at("data"), "iVBORw0KGgo=");
}

TEST(McpResultTest, WithAStoreOtherFilesAreResourceLinks) {
  ExecutionResult r;
  r.outcome = Outcome::kOk;
  r.exit_code = 0;
  r.files.push_back({"/out/a.csv", "text/csv", 4, "a,b\n"});
  r.files.push_back({"/out/huge.csv", "text/csv", 5, "12345"});
  r.files.push_back({"/out/p.png", "image/png", 8, std::string(kPng, 8)});
  McpContentOptions options;
  std::vector<std::string> kept;
  options.keep = [&kept](const CapturedFile& f) -> std::optional<std::string> {
    kept.push_back(f.path);
    if (f.path == "/out/huge.csv") return std::nullopt;  // the store refuses it
    return "codeact://files/x/" + f.path.substr(5);
  };
  const json::array content = McpResultContent(r, ToJson(r), options);
  ASSERT_EQ(content.size(), 3u);  // text, the link, the image; nothing for the refused file
  EXPECT_EQ(kept, (std::vector<std::string>{"/out/a.csv", "/out/huge.csv"}));
  EXPECT_EQ(content[1], json::parse(R"({"type":"resource_link","uri":"codeact://files/x/a.csv",
      "name":"/out/a.csv","mimeType":"text/csv","size":4})"));
  EXPECT_EQ(content[2].at("type"), "image");
  const json::value text = json::parse(content[0].at("text").as_string());
  EXPECT_EQ(text.at("files").at(0).at("resource"), "codeact://files/x/a.csv");
  EXPECT_TRUE(text.at("files").at(1).at("resource").is_null());
  EXPECT_NE(std::string(text.at("files").at(1).at("note").as_string()).find("not kept"),
            std::string::npos);
  EXPECT_EQ(text.at("files").at(2).at("shown_as"), "image");
}

TEST(McpResultTest, ImagesPastTheImageBudgetAreLinkedInstead) {
  ExecutionResult r;
  r.outcome = Outcome::kOk;
  r.exit_code = 0;
  const std::string png = std::string(kPng, 8) + std::string(92, 'x');  // 100 bytes
  r.files.push_back({"/out/1.png", "image/png", 100, png});
  r.files.push_back({"/out/2.png", "image/png", 100, png});
  McpContentOptions options;
  options.max_image_bytes = 150;
  options.keep = [](const CapturedFile& f) -> std::optional<std::string> {
    return "codeact://files/x" + f.path;
  };
  const json::array content = McpResultContent(r, ToJson(r), options);
  ASSERT_EQ(content.size(), 3u);
  EXPECT_EQ(content[1].at("type"), "image");
  EXPECT_EQ(content[2].at("type"), "resource_link");
  EXPECT_EQ(content[2].at("uri"), "codeact://files/x/out/2.png");
  EXPECT_EQ(content[2].at("mimeType"), "image/png");
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
