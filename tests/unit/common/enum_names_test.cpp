#include "common/enum_names.hpp"

#include <gtest/gtest.h>

#include "codeact/status.hpp"
#include "common/names.hpp"

namespace codeact::internal {
namespace {

enum class Color { kRed, kGreen, kBlue };

constexpr auto kColors = MakeEnumNames<Color>(
    "none", {{Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}});

// The check MakeEnumNames makes: a table that misses the last or the first value, names one
// twice or names a value that is no enumerator does not compile.
static_assert(NamesEachEnumeratorOnce<Color>(
    {{Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}}));
static_assert(!NamesEachEnumeratorOnce<Color>({{Color::kRed, "red"}, {Color::kGreen, "green"}}));
static_assert(!NamesEachEnumeratorOnce<Color>({{Color::kGreen, "green"}, {Color::kBlue, "blue"}}));
static_assert(!NamesEachEnumeratorOnce<Color>(
    {{Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kGreen, "blue"}}));
static_assert(!NamesEachEnumeratorOnce<Color>({{Color::kRed, "red"},
                                               {Color::kGreen, "green"},
                                               {Color::kBlue, "blue"},
                                               {static_cast<Color>(3), "black"}}));

TEST(EnumNamesTest, NameAndParseReadOneTableBothWays) {
  EXPECT_EQ(kColors.Name(Color::kBlue), "blue");
  EXPECT_EQ(kColors.Name(static_cast<Color>(7)), "none");
  EXPECT_EQ(kColors.Parse("green"), Color::kGreen);
  EXPECT_EQ(kColors.Parse("Green"), std::nullopt);
  EXPECT_EQ(kColors.Parse(""), std::nullopt);
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
