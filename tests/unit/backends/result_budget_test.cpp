#include "backends/result_budget.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "codeact/json.hpp"
#include "files/mount_capture.hpp"
#include "json/result_size.hpp"

namespace codeact::internal {
namespace {

CapturedFile File(std::string path, std::size_t bytes, char fill = 'x') {
  CapturedFile f;
  f.path = std::move(path);
  f.media_type = "text/plain";
  f.data = std::string(bytes, fill);
  f.size = static_cast<std::int64_t>(bytes);
  return f;
}

ExecutionResult Ok() {
  ExecutionResult r;
  r.outcome = Outcome::kOk;
  r.exit_code = 0;
  r.backend = "local";
  r.isolation = "process";
  r.duration_ms = 12;
  return r;
}

std::vector<std::string> Paths(const std::vector<CapturedFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.path);
  return out;
}

// Text that escapes and repairs at every byte: control characters, quotes, invalid UTF-8,
// valid multi-byte characters.
std::string Hostile(std::size_t bytes, unsigned seed) {
  std::mt19937 random(seed);
  static const std::string kPieces[] = {"\x01", "\"",       "\\",           "\n", "\xff",
                                        "\xc3", "\xc3\xa9", "\xe2\x80\xa6", "a"};
  std::string out;
  while (out.size() < bytes) out += kPieces[random() % std::size(kPieces)];
  return out;
}

const std::vector<FileMount> kMounts = {FileMount{"/host/out", "/out"},
                                        FileMount{"/host/data", "/data/set"}};

TEST(ResultJsonBytesTest, MatchesTheSerialisedSizeAndTheBoundHoldsIt) {
  std::vector<ExecutionResult> cases(5, Ok());
  cases[1].stdout_text = Hostile(5000, 1);
  cases[1].stderr_text = Hostile(300, 2);
  cases[1].message = Hostile(100, 3);
  cases[1].error = UserError{Hostile(10, 4), Hostile(200, 5), Hostile(900, 6)};
  cases[2].output_present = true;
  cases[2].output_json =
      R"([1e4, 1E5, 0.1, -0, "\u00e9\ud83d\ude00", {"a": [true, null]}, 18446744073709551616])";
  cases[2].files = {File("/out/a.txt", 0), File("/out/" + Hostile(50, 7), 1),
                    File("/out/c.bin", 1000, '\0')};
  cases[2].omitted_files = {{"/out/" + Hostile(40, 8), Hostile(40, 9)},
                            {"/out/\u2026", "and 3 more files omitted: x"}};
  cases[3].outcome = Outcome::kValidationFailed;
  cases[3].exit_code = -1;
  cases[3].violations = {{1, 2, "rule", Hostile(60, 10), "hint"}, {3, 4, "r", "m", ""}};
  cases[4].output_present = true;
  cases[4].output_json = "not json";  // carried as null
  cases[4].duration_ms = 9'223'372'036'854'775'807;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::size_t exact = ToJson(cases[i]).size();
    EXPECT_EQ(ResultJsonBytes(cases[i]), exact) << "case " << i;
    EXPECT_GE(ResultJsonBytesUpperBound(cases[i]), exact) << "case " << i;
  }
  const std::string empty_data =
      R"({"path":"/out/c.bin","media_type":"text/plain","size":1000,"data_base64":""})";
  EXPECT_EQ(CapturedFileJsonBytes(cases[2].files[2]),
            empty_data.size() + 1336);  // 1000 bytes in base64
}

TEST(FitResultTest, AnOrdinaryResultIsLeftAlone) {
  ExecutionResult r = Ok();
  r.stdout_text = "hello\n";
  r.files = {File("/out/a.txt", 100)};
  const std::string before = ToJson(r);
  FitResult(r, 64 << 10, kMounts);
  EXPECT_EQ(ToJson(r), before);
}

TEST(FitResultTest, OmitsTheLargestFilesFirstAndLeavesTheOutputWhenThatIsEnough) {
  ExecutionResult r = Ok();
  r.stdout_text = std::string(100'000, 'o');
  r.files = {File("/out/a-small.txt", 10'000), File("/out/b-large.txt", 50'000),
             File("/out/c-medium.txt", 30'000)};
  r.omitted_files = {{"/out/link", "symlink not followed"}};
  constexpr std::int64_t kMax = 128 << 10;
  FitResult(r, kMax, kMounts);

  EXPECT_LE(ToJson(r).size() + kResultBookkeepingBytes, static_cast<std::size_t>(kMax));
  EXPECT_EQ(Paths(r.files), std::vector<std::string>{"/out/a-small.txt"});
  EXPECT_EQ(r.stdout_text.size(), 100'000u);
  EXPECT_FALSE(r.stdout_truncated);
  ASSERT_EQ(r.omitted_files.size(), 3u);  // sorted by path
  EXPECT_EQ(r.omitted_files[0].path, "/out/b-large.txt");
  EXPECT_EQ(r.omitted_files[0].reason, "result size limit of 131072 bytes reached");
  EXPECT_EQ(r.omitted_files[1].path, "/out/c-medium.txt");
  EXPECT_EQ(r.omitted_files[1].reason, "result size limit of 131072 bytes reached");
  EXPECT_EQ(r.omitted_files[2].path, "/out/link");
  EXPECT_EQ(r.message, "result size limit of 131072 bytes reached: 2 captured files omitted");
  EXPECT_TRUE(r.success());
}

TEST(FitResultTest, CutsTheStreamsOnlyOnceNoFileIsLeft) {
  ExecutionResult r = Ok();
  r.stdout_text = std::string(200'000, 'o');
  r.stderr_text = std::string(10'000, 'e');
  r.output_present = true;
  r.output_json = R"({"answer": 42})";
  r.message = "earlier note";
  r.files = {File("/out/a.txt", 20'000)};
  constexpr std::int64_t kMax = 64 << 10;
  FitResult(r, kMax, kMounts);

  const std::size_t size = ToJson(r).size();
  EXPECT_LE(size + kResultBookkeepingBytes, static_cast<std::size_t>(kMax));
  EXPECT_GT(size, static_cast<std::size_t>(kMax) - 1024) << "more was cut than needed";
  EXPECT_TRUE(r.files.empty());
  ASSERT_EQ(r.omitted_files.size(), 1u);
  EXPECT_EQ(r.omitted_files[0].path, "/out/a.txt");
  // stderr needed less than half the room and is whole; stdout keeps its start.
  EXPECT_EQ(r.stderr_text, std::string(10'000, 'e'));
  EXPECT_FALSE(r.stderr_truncated);
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_GT(r.stdout_text.size(), 40'000u);
  EXPECT_LT(r.stdout_text.size(), 200'000u);
  EXPECT_EQ(r.stdout_text, std::string(r.stdout_text.size(), 'o'));
  EXPECT_TRUE(r.output_present);
  EXPECT_EQ(r.message,
            "earlier note; result size limit of 65536 bytes reached: 1 captured file omitted, "
            "stdout cut");
}

TEST(FitResultTest, DropsTheOutputWhenEmptyStreamsWouldNotMakeRoom) {
  ExecutionResult r = Ok();
  r.stdout_text = "short";
  r.output_present = true;
  r.output_json = "\"" + std::string(100'000, 'v') + "\"";
  FitResult(r, 64 << 10, kMounts);
  EXPECT_LE(ToJson(r).size() + kResultBookkeepingBytes, 64u << 10);
  EXPECT_FALSE(r.output_present);
  EXPECT_EQ(r.output_json, "null");
  EXPECT_EQ(r.stdout_text, "short");
  EXPECT_FALSE(r.stdout_truncated);
  EXPECT_EQ(r.message, "result size limit of 65536 bytes reached: output dropped");
}

TEST(FitResultTest, CutsAtACharacterBoundary) {
  ExecutionResult r = Ok();
  std::string text;
  while (text.size() < 100'000) text += "\xe2\x80\xa6";  // "…", 3 bytes
  r.stdout_text = text;
  FitResult(r, 64 << 10, kMounts);
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_EQ(r.stdout_text.size() % 3, 0u);
  EXPECT_EQ(text.compare(0, r.stdout_text.size(), r.stdout_text), 0);
}

TEST(FitResultTest, ManySmallFilesWithLongPathsEndInOneSummaryPerMount) {
  ExecutionResult r = Ok();
  r.stdout_text = std::string(1 << 20, 'o');
  const std::string deep(12'000, 'd');
  for (int i = 0; i < 1000; ++i)
    r.files.push_back(File("/out/" + deep + "/f" + std::to_string(1000 + i), 1));
  for (int i = 0; i < 20; ++i)
    r.files.push_back(File("/data/set/" + deep + "/g" + std::to_string(10 + i), 1));
  constexpr std::int64_t kMax = 2 << 20;
  FitResult(r, kMax, kMounts);

  EXPECT_LE(ToJson(r).size() + kResultBookkeepingBytes, static_cast<std::size_t>(kMax));
  EXPECT_EQ(r.stdout_text.size(), 1u << 20) << "files go first";
  EXPECT_FALSE(r.stdout_truncated);
  EXPECT_LT(r.files.size(), 100u);
  EXPECT_LE(r.omitted_files.size(), CaptureLimits().max_listed_omissions + 2);
  std::size_t omitted = 0;
  for (const OmittedFile& f : r.omitted_files) {
    if (!f.path.ends_with("\u2026")) {
      ++omitted;
      continue;
    }
    const std::size_t more = std::stoul(f.reason.substr(4));
    omitted += more;
    EXPECT_TRUE(f.path == "/out/\u2026" || f.path == "/data/set/\u2026") << f.path;
    EXPECT_NE(f.reason.find("omitted: result size limit of 2097152 bytes reached"),
              std::string::npos)
        << f.reason;
  }
  EXPECT_EQ(omitted + r.files.size(), 1020u);
}

TEST(FitResultTest, TheBoundHoldsForHostileResultsAtEveryBudget) {
  for (const std::int64_t max :
       {std::int64_t{4} << 10, std::int64_t{64} << 10, std::int64_t{1} << 20}) {
    for (unsigned seed = 0; seed < 3; ++seed) {
      ExecutionResult r = Ok();
      r.outcome = Outcome::kError;
      r.exit_code = 1;
      r.stdout_text = Hostile(300'000, seed);
      r.stderr_text = Hostile(200'000, seed + 10);
      r.message = Hostile(50'000, seed + 20);
      r.error = UserError{Hostile(20'000, seed + 30), Hostile(100'000, seed + 40),
                          Hostile(300'000, seed + 50)};
      r.output_present = true;
      r.output_json = "[" + std::string(20'000, '1') + "]";
      for (int i = 0; i < 300; ++i) r.files.push_back(File("/out/" + Hostile(2000, seed + i), 100));
      for (int i = 0; i < 150; ++i)
        r.omitted_files.push_back({"/data/set/" + Hostile(3000, seed + i), Hostile(100, i)});
      for (int i = 0; i < 200; ++i)
        r.violations.push_back({i, i, "rule", Hostile(500, seed + i), "hint"});
      FitResult(r, max, kMounts);
      EXPECT_LE(ToJson(r).size() + kResultBookkeepingBytes, static_cast<std::size_t>(max))
          << "budget " << max << ", seed " << seed << ": "
          << r.message.substr(r.message.rfind("result size"));
      EXPECT_NE(r.message.find("result size limit of " + std::to_string(max) + " bytes reached"),
                std::string::npos);
    }
  }
}

}  // namespace
}  // namespace codeact::internal
