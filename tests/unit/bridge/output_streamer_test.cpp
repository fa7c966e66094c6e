// OutputStreamer on its own: chunk sizes, the interval, UTF-8 boundaries, and a slow callback
// that loses chunks but never holds the producer back.
#include "bridge/output_streamer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

struct Received {
  std::mutex mu;
  std::vector<std::pair<OutputStreamKind, std::string>> chunks;
  OutputCallback Callback() {
    return [this](const OutputChunk& chunk) {
      std::lock_guard lock(mu);
      chunks.emplace_back(chunk.stream, std::string(chunk.data));
    };
  }
  std::string Joined(OutputStreamKind kind) {
    std::string all;
    for (const auto& [k, bytes] : chunks)
      if (k == kind) all += bytes;
    return all;
  }
};

TEST(OutputStreamerTest, FullChunksGoAtOnceAndTheRestWhenDue) {
  Received got;
  OutputStreamer streamer(got.Callback());
  std::string kept(150'000, 'x');
  streamer.Follow(OutputStreamKind::kStdout, kept);
  // Two full chunks are queued without waiting for the interval; the rest is pending.
  EXPECT_NE(streamer.NextDue(), Clock::time_point::max());
  streamer.SendDue(Clock::now());  // the first send is due at once
  EXPECT_EQ(streamer.NextDue(), Clock::time_point::max());
  kept += "tail";
  streamer.Follow(OutputStreamKind::kStdout, kept);
  streamer.Follow(OutputStreamKind::kStderr, "err");
  // Sent less than an interval ago: the pending bytes wait.
  EXPECT_GT(streamer.NextDue(), Clock::now());
  EXPECT_EQ(streamer.Finish(), 0);
  ASSERT_EQ(got.chunks.size(), 5u);
  for (const auto& [kind, bytes] : got.chunks) {
    EXPECT_LE(static_cast<std::int64_t>(bytes.size()), kOutputChunkMaxBytes);
  }
  EXPECT_EQ(got.chunks[0].second.size(), static_cast<std::size_t>(kOutputChunkMaxBytes));
  EXPECT_EQ(got.Joined(OutputStreamKind::kStdout), kept);
  EXPECT_EQ(got.Joined(OutputStreamKind::kStderr), "err");
}

TEST(OutputStreamerTest, AChunkDoesNotEndInsideACharacter) {
  Received got;
  OutputStreamer streamer(got.Callback());
  const std::string euro = "\xE2\x82\xAC";  // three bytes
  std::string kept = "a" + euro.substr(0, 2);
  streamer.Follow(OutputStreamKind::kStdout, kept);
  streamer.SendDue(Clock::now());
  kept += euro.substr(2) + "b";
  streamer.Follow(OutputStreamKind::kStdout, kept);
  streamer.SendDue(Clock::now() + std::chrono::seconds(1));
  EXPECT_EQ(streamer.Finish(), 0);
  ASSERT_EQ(got.chunks.size(), 2u);
  EXPECT_EQ(got.chunks[0].second, "a");
  EXPECT_EQ(got.chunks[1].second, euro + "b");
}

TEST(OutputStreamerTest, ASlowCallbackLosesChunksNotTime) {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  int calls = 0;
  OutputStreamer streamer([&](const OutputChunk&) {
    std::unique_lock lock(mu);
    ++calls;
    cv.wait(lock, [&] { return released; });
  });
  // 4 MiB while the callback is stuck on its first chunk: the producer never waits.
  std::string kept;
  for (int i = 0; i < 64; ++i) {
    kept.append(64 << 10, 'y');
    streamer.Follow(OutputStreamKind::kStdout, kept);
  }
  std::thread release([&] {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  });
  const std::int64_t dropped = streamer.Finish();
  release.join();
  const std::int64_t queued = kMaxQueuedOutputBytes / kOutputChunkMaxBytes;
  EXPECT_GE(dropped, 64 - queued - 1);
  EXPECT_LE(dropped, 64 - 1);
  EXPECT_EQ(calls + dropped, 64);
  EXPECT_NE(DroppedChunksNote(dropped).find(std::to_string(dropped) + " output chunks dropped"),
            std::string::npos);
  EXPECT_EQ(DroppedChunksNote(0), "");
}

TEST(OutputStreamerTest, AThrowingCallbackCountsItsChunkAsDropped) {
  OutputStreamer streamer([](const OutputChunk&) { throw std::runtime_error("no"); });
  streamer.Follow(OutputStreamKind::kStderr, "boom");
  EXPECT_EQ(streamer.Finish(), 1);
  EXPECT_EQ(streamer.Finish(), 1);  // later calls return the same count
}

}  // namespace
}  // namespace codeact::internal
