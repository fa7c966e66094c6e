// CancellationSource and CancellationToken: first reason wins, callbacks run exactly once, and a
// registration that is gone is never called.
#include "codeact/cancellation.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace codeact {
namespace {

TEST(CancellationTest, ADefaultTokenIsNeverCancelled) {
  const CancellationToken token;
  EXPECT_FALSE(token.cancelled());
  EXPECT_EQ(token.reason(), "");
  int calls = 0;
  {
    auto registration = token.OnCancel([&] { ++calls; });
  }
  EXPECT_EQ(calls, 0);
}

TEST(CancellationTest, TheFirstCancelWinsAndCallbacksRunOnce) {
  CancellationSource source;
  const CancellationToken token = source.token();
  int calls = 0;
  auto registration = token.OnCancel([&] { ++calls; });
  EXPECT_FALSE(token.cancelled());
  EXPECT_TRUE(source.Cancel("the server is shutting down"));
  EXPECT_FALSE(source.Cancel("a later reason"));
  EXPECT_TRUE(token.cancelled());
  EXPECT_TRUE(source.cancelled());
  EXPECT_EQ(token.reason(), "the server is shutting down");
  EXPECT_EQ(calls, 1);
}

TEST(CancellationTest, ACallbackOnACancelledTokenRunsAtOnce) {
  CancellationSource source;
  source.Cancel("done");
  int calls = 0;
  auto registration = source.token().OnCancel([&] { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST(CancellationTest, AnUnregisteredCallbackIsNotCalled) {
  CancellationSource source;
  int calls = 0;
  {
    auto registration = source.token().OnCancel([&] { ++calls; });
  }
  source.Cancel("late");
  EXPECT_EQ(calls, 0);
}

TEST(CancellationTest, ConcurrentCancelsAgreeOnOneReason) {
  for (int round = 0; round < 50; ++round) {
    CancellationSource source;
    std::atomic<int> winners{0};
    std::atomic<int> callbacks{0};
    auto registration = source.token().OnCancel([&] { ++callbacks; });
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back(
          [&, i] { winners += source.Cancel("reason " + std::to_string(i)) ? 1 : 0; });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(winners.load(), 1);
    EXPECT_EQ(callbacks.load(), 1);
    const std::string reason = source.token().reason();
    EXPECT_EQ(reason.rfind("reason ", 0), 0u) << reason;
  }
}

}  // namespace
}  // namespace codeact
