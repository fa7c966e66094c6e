// Integer literals beyond int64 found in JSON text (json/int64_range.hpp), where a parser would
// turn them into an unsigned or a double.
#include "json/int64_range.hpp"

#include <gtest/gtest.h>

namespace codeact::internal {
namespace {

TEST(Int64RangeTest, TheBoundsThemselvesFit) {
  EXPECT_FALSE(FirstIntegerBeyondInt64("9223372036854775807"));
  EXPECT_FALSE(FirstIntegerBeyondInt64("-9223372036854775808"));
  EXPECT_FALSE(FirstIntegerBeyondInt64("[0, -0, 000000000000000000000000001, 1e300, 1.5]"));
  EXPECT_EQ(FirstIntegerBeyondInt64("9223372036854775808"), "9223372036854775808");
  EXPECT_EQ(FirstIntegerBeyondInt64("-9223372036854775809"), "-9223372036854775809");
}

TEST(Int64RangeTest, OnlyIntegerLiteralsOutsideStringsCount) {
  EXPECT_FALSE(FirstIntegerBeyondInt64(R"({"id":"123456789012345678901234567890"})"));
  EXPECT_FALSE(FirstIntegerBeyondInt64(R"({"a\"123456789012345678901":1})"));
  EXPECT_FALSE(FirstIntegerBeyondInt64("123456789012345678901234567890.0"));
  EXPECT_FALSE(FirstIntegerBeyondInt64("1234567890123456789012345e0"));
  EXPECT_EQ(FirstIntegerBeyondInt64(R"({"s":"x","n":[1,18446744073709551616]})"),
            "18446744073709551616");
  const auto long_one = FirstIntegerBeyondInt64(std::string(100, '7'));
  ASSERT_TRUE(long_one.has_value());
  EXPECT_EQ(*long_one, std::string(40, '7') + "...");
}

TEST(Int64RangeTest, MalformedTextIsReadWithoutFailing) {
  EXPECT_FALSE(FirstIntegerBeyondInt64("\"unterminated 99999999999999999999"));
  EXPECT_FALSE(FirstIntegerBeyondInt64("--+-"));
  EXPECT_FALSE(FirstIntegerBeyondInt64("\\"));
}

}  // namespace
}  // namespace codeact::internal
