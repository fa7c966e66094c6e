// The HTTP service's sessions per caller (http_server/caller_sessions.hpp): one caller's cap
// leaves the others room, and a session that closed (or that nobody holds) frees its place.
#include "http_server/caller_sessions.hpp"

#include <gtest/gtest.h>

#include <string>

namespace codeact::internal {
namespace {

class FakeSession final : public Session {
 public:
  const std::string& id() const override { return id_; }
  const std::string& name() const override { return id_; }
  std::chrono::system_clock::time_point created() const override { return {}; }
  std::chrono::system_clock::time_point last_used() const override { return {}; }
  ExecutionResult Execute(const std::string&) override { return {}; }
  ExecutionResult Execute(const std::string&, const InvokeOptions&) override { return {}; }
  Status Pause() override { return Status(); }
  Status Resume() override { return Status(); }
  bool paused() const override { return false; }
  void Close() override { closed_ = true; }
  bool closed() const override { return closed_; }
  std::string closed_reason() const override { return closed_ ? "closed" : ""; }
  bool expired() const override { return false; }

 private:
  std::string id_ = "fake";
  bool closed_ = false;
};

StatusOr<std::shared_ptr<Session>> NewFake() {
  return std::shared_ptr<Session>(std::make_shared<FakeSession>());
}

TEST(CallerSessionsTest, OneCallersCapLeavesOthersRoomAndRefusesBeforeOpening) {
  CallerSessions sessions(2);
  auto a1 = sessions.Open("a", NewFake);
  auto a2 = sessions.Open("a", NewFake);
  ASSERT_TRUE(a1.ok() && a2.ok());
  bool called = false;
  auto a3 = sessions.Open("a", [&] {
    called = true;
    return NewFake();
  });
  ASSERT_FALSE(a3.ok());
  EXPECT_EQ(a3.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(a3.status().message().find("this caller has 2 sessions open, its limit"),
            std::string::npos)
      << a3.status().message();
  EXPECT_FALSE(called) << "nothing is started past the cap";
  EXPECT_TRUE(sessions.Open("b", NewFake).ok());
  // A closed session (the provider's idle expiry) and a dropped one free their places.
  (*a1)->Close();
  EXPECT_EQ(sessions.OpenCount("a"), 1);
  a2->reset();
  EXPECT_EQ(sessions.OpenCount("a"), 0);
  EXPECT_TRUE(sessions.Open("a", NewFake).ok());
}

TEST(CallerSessionsTest, AFailedOpenGivesItsPlaceBack) {
  CallerSessions sessions(1);
  auto failed =
      sessions.Open("a", [] { return StatusOr<std::shared_ptr<Session>>(Unavailable("no")); });
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(sessions.Open("a", NewFake).ok());
}

}  // namespace
}  // namespace codeact::internal
