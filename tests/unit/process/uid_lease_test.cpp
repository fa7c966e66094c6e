#include "process/uid_lease.hpp"

#include <gtest/gtest.h>

#include <optional>

namespace codeact::internal {
namespace {

TEST(UidLeaseTest, EachLeaseHoldsItsOwnUidUntilReleased) {
  const UidRangeSpec range{0x7F000000, 2};
  auto a = UidLease::Acquire(range);
  auto b = UidLease::Acquire(range);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->uid(), b->uid());
  for (const auto* l : {&*a, &*b}) {
    EXPECT_GE(l->uid(), range.first);
    EXPECT_LT(l->uid(), range.first + range.count);
  }
  auto c = UidLease::Acquire(range);
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  const uid_t freed = a->uid();
  { UidLease gone = std::move(*a); }  // released
  auto d = UidLease::Acquire(range);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->uid(), freed);
}

TEST(UidLeaseTest, AnEmptyRangeIsRefused) {
  EXPECT_EQ(UidLease::Acquire({0x7F000000, 0}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace codeact::internal
