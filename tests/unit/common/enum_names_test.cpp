#include "common/enum_names.hpp"

#include <gtest/gtest.h>

#include "codeact/status.hpp"
#include "common/names.hpp"

namespace codeact::internal {
namespace {

enum class Color { kRed, kGreen, kBlue };

constexpr auto kColors =
    MakeEnumNames<Color>("none", {{Color::kRed, "red"}, {Color::kGreen, "green"}});
constexpr auto kAllColors = MakeEnumNames<Color>(
    "none", {{Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}});
constexpr auto kTwiceGreen = MakeEnumNames<Color>(
    "none", {{Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kGreen, "blue"}});
constexpr auto kNoRed =
    MakeEnumNames<Color>("none", {{Color::kGreen, "green"}, {Color::kBlue, "blue"}});

// The completeness check fails a table that misses the last or first value, or names one twice.
static_assert(NamesEachValueOnce<kAllColors>());
static_assert(!NamesEachValueOnce<kColors>());
static_assert(!NamesEachValueOnce<kTwiceGreen>());
static_assert(!NamesEachValueOnce<kNoRed>());

TEST(EnumNamesTest, NameAndParseReadOneTableBothWays) {
  EXPECT_EQ(kAllColors.Name(Color::kBlue), "blue");
  EXPECT_EQ(kColors.Name(Color::kBlue), "none");
  EXPECT_EQ(kAllColors.Name(static_cast<Color>(7)), "none");
  EXPECT_EQ(kAllColors.Parse("green"), Color::kGreen);
  EXPECT_EQ(kAllColors.Parse("Green"), std::nullopt);
  EXPECT_EQ(kAllColors.Parse(""), std::nullopt);
}

TEST(EnumNamesTest, PublicNamesKeepTheirTextAndFallback) {
  EXPECT_EQ(OutcomeName(Outcome::kValidationFailed), "validation_failed");
  EXPECT_EQ(OutcomeName(static_cast<Outcome>(99)), "internal_error");
  EXPECT_EQ(kOutcomeNames.Parse("cpu_limit"), Outcome::kCpuLimit);
  EXPECT_EQ(SessionStateName(SessionState::kRestarted), "restarted");
  EXPECT_EQ(BackendName(static_cast<BackendKind>(9)), "unknown");
  EXPECT_EQ(IsolationName(IsolationLevel::kMicroVm), "microvm");
  EXPECT_EQ(IsolationName(static_cast<IsolationLevel>(9)), "auto");
  EXPECT_EQ(MountModeName(MountMode::kReadOnly), "ro");
  EXPECT_EQ(MountModeName(static_cast<MountMode>(9)), "unknown");
  EXPECT_EQ(MountKindName(MountKind::kFile), "file");
  EXPECT_EQ(StatusCodeName(StatusCode::kDeadlineExceeded), "DEADLINE_EXCEEDED");
  EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(99)), "UNKNOWN");
}

}  // namespace
}  // namespace codeact::internal
