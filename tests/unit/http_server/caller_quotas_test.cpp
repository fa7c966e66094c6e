// The HTTP service's per-caller quotas (http_server/caller_quotas.hpp): the token bucket and
// the run slots, and the memory of callers that stays bounded.
#include "http_server/caller_quotas.hpp"

#include <gtest/gtest.h>

#include <string>

namespace codeact::internal {
namespace {

TEST(CallerQuotasTest, ABucketRefusesPastItsBurstWithTheSecondsToWait) {
  CallerQuotas quotas(0, 0.5, 2);
  EXPECT_FALSE(quotas.TakeRequest("a").has_value());
  EXPECT_FALSE(quotas.TakeRequest("a").has_value());
  const auto wait = quotas.TakeRequest("a");
  ASSERT_TRUE(wait.has_value());
  EXPECT_EQ(*wait, 2);                                // one token at 0.5 per second
  EXPECT_FALSE(quotas.TakeRequest("b").has_value());  // each caller has a bucket of its own
}

// Callers whose bucket has refilled are forgotten (a fresh caller gets a full one), so a stream of
// distinct callers does not grow the map without bound; a caller who drained its bucket is kept
// however many others come, and still refused.
TEST(CallerQuotasTest, RefilledBucketsAreForgottenAndDrainedOnesKept) {
  CallerQuotas fast(0, 1e9, 1);  // refills within nanoseconds
  for (int i = 0; i < 20000; ++i) {
    ASSERT_FALSE(fast.TakeRequest("caller-" + std::to_string(i)).has_value());
  }
  EXPECT_LE(fast.tracked_callers(), 2048u);

  CallerQuotas slow(0, 0.001, 1);
  EXPECT_FALSE(slow.TakeRequest("drained").has_value());
  for (int i = 0; i < 5000; ++i) slow.TakeRequest("other-" + std::to_string(i));
  EXPECT_EQ(slow.tracked_callers(), 5001u);
  EXPECT_TRUE(slow.TakeRequest("drained").has_value());
}

TEST(CallerQuotasTest, RunSlotsAreReleasedWithTheirGuard) {
  CallerQuotas quotas(1, 0, 0);
  auto first = quotas.TakeRun("a");
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(quotas.TakeRun("a").has_value());
  EXPECT_TRUE(quotas.TakeRun("b").has_value());
  first.reset();
  EXPECT_TRUE(quotas.TakeRun("a").has_value());
}

// A batch of runs costs one per run: all of it is taken, or (when the bucket holds less)
// nothing, with the seconds until it would fit.
TEST(CallerQuotasTest, ACostOfSeveralRunsIsTakenWholeOrNotAtAll) {
  CallerQuotas quotas(0, 0.001, 5);
  EXPECT_FALSE(quotas.TakeRequest("a", 3).has_value());
  const auto wait = quotas.TakeRequest("a", 3);  // 2 left
  ASSERT_TRUE(wait.has_value());
  EXPECT_GE(*wait, 999);
  EXPECT_FALSE(quotas.TakeRequest("a", 2).has_value()) << "the refused cost took nothing";
  EXPECT_TRUE(quotas.TakeRequest("a").has_value());
  EXPECT_EQ(quotas.burst(), 5);
  EXPECT_TRUE(quotas.limits_rate());
  EXPECT_FALSE(CallerQuotas(0, 0, 0).limits_rate());
}

}  // namespace
}  // namespace codeact::internal
