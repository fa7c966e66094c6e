// OutputStreamer: the host side of ExecutionRequest::on_output (codeact/output_stream.hpp). The
// run's loop hands it what it kept of stdout and stderr; it cuts that into chunks (at most
// kOutputChunkMaxBytes, at least one every kOutputChunkIntervalMs while output is pending) and
// queues them for a delivery thread of its own, so a slow callback never holds the loop back:
// past kMaxQueuedOutputBytes queued, a chunk is dropped and counted.
//
// Thread safety: Add, SendDue, NextDue and Finish are the loop thread's; the callback runs on the
// delivery thread, one call at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "codeact/output_stream.hpp"

namespace codeact::internal {

class OutputStreamer {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts the delivery thread. `callback` must be set.
  explicit OutputStreamer(OutputCallback callback);
  ~OutputStreamer();  // Finish()
  OutputStreamer(const OutputStreamer&) = delete;
  OutputStreamer& operator=(const OutputStreamer&) = delete;

  // `kept` is all the run kept of `stream` so far (within its cap, so nothing past the cap is
  // streamed); what was not handed over before is added to the pending output.
  void Follow(OutputStreamKind stream, const std::string& kept);
  // Queues the pending output whose interval has passed (and every full chunk).
  void SendDue(Clock::time_point now);
  // When SendDue has something to send next; Clock::time_point::max() when nothing is pending.
  Clock::time_point NextDue() const;
  // Queues everything pending, gives the delivery thread up to kOutputDrainGraceMs to deliver
  // what is queued, drops the rest, joins it, and returns how many chunks were dropped in all.
  // Later calls return the same count.
  std::int64_t Finish();

 private:
  struct Pending {
    OutputStreamKind kind;
    std::string bytes;
    std::size_t followed = 0;  // the bytes of `kept` handed over so far
  };
  struct Chunk {
    OutputStreamKind kind;
    std::string bytes;
  };

  void Add(Pending& pending, std::string_view bytes);
  void Queue(OutputStreamKind kind, std::string bytes);
  void SendPending(Pending& pending, bool all);
  void Deliver();

  Pending out_{OutputStreamKind::kStdout, {}};
  Pending err_{OutputStreamKind::kStderr, {}};
  Clock::time_point last_sent_{};  // the epoch: the first output goes out at once
  bool finished_ = false;
  std::int64_t dropped_total_ = 0;

  OutputCallback callback_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Chunk> queue_;
  std::int64_t queued_bytes_ = 0;
  std::int64_t dropped_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the members above exist
};

// The note a result's message gets when `dropped` chunks were not streamed; "" for none.
std::string DroppedChunksNote(std::int64_t dropped);

}  // namespace codeact::internal
