#include "bridge/output_streamer.hpp"

#include <algorithm>
#include <utility>

namespace codeact::internal {
namespace {

// The length of `bytes` without a UTF-8 sequence cut short at its end, so that a chunk a surface
// turns into text does not split a character; whole when nothing is cut (or it is not UTF-8).
std::size_t WholeUtf8Prefix(std::string_view bytes) {
  const std::size_t n = bytes.size();
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return length > back ? n - back : n;
  }
  return n;
}

}  // namespace

OutputStreamer::OutputStreamer(OutputCallback callback)
    : callback_(std::move(callback)), thread_([this] { Deliver(); }) {}

OutputStreamer::~OutputStreamer() { Finish(); }

void OutputStreamer::Follow(OutputStreamKind stream, const std::string& kept) {
  Pending& pending = stream == OutputStreamKind::kStderr ? err_ : out_;
  if (finished_ || kept.size() <= pending.followed) return;
  Add(pending, std::string_view(kept).substr(pending.followed));
  pending.followed = kept.size();
}

void OutputStreamer::Add(Pending& pending, std::string_view bytes) {
  pending.bytes.append(bytes);
  // Full chunks go at once: a flood is not held to the interval.
  while (static_cast<std::int64_t>(pending.bytes.size()) >= kOutputChunkMaxBytes) {
    std::size_t cut =
        WholeUtf8Prefix(std::string_view(pending.bytes).substr(0, kOutputChunkMaxBytes));
    if (cut == 0) cut = kOutputChunkMaxBytes;
    Queue(pending.kind, pending.bytes.substr(0, cut));
    pending.bytes.erase(0, cut);
  }
}

void OutputStreamer::SendPending(Pending& pending, bool all) {
  if (pending.bytes.empty()) return;
  std::size_t cut = all ? pending.bytes.size() : WholeUtf8Prefix(pending.bytes);
  if (cut == 0) return;  // only the start of a character: it waits for the rest
  Queue(pending.kind, pending.bytes.substr(0, cut));
  pending.bytes.erase(0, cut);
}

void OutputStreamer::SendDue(Clock::time_point now) {
  if (finished_ || now < NextDue()) return;
  SendPending(out_, false);
  SendPending(err_, false);
  last_sent_ = now;
}

OutputStreamer::Clock::time_point OutputStreamer::NextDue() const {
  if (out_.bytes.empty() && err_.bytes.empty()) return Clock::time_point::max();
  return last_sent_ + std::chrono::milliseconds(kOutputChunkIntervalMs);
}

void OutputStreamer::Queue(OutputStreamKind kind, std::string bytes) {
  {
    std::lock_guard lock(mu_);
    const auto size = static_cast<std::int64_t>(bytes.size());
    if (queued_bytes_ + size > kMaxQueuedOutputBytes && !queue_.empty()) {
      ++dropped_;  // the callback is behind: the run goes on, this chunk is not streamed
      return;
    }
    queued_bytes_ += size;
    queue_.push_back({kind, std::move(bytes)});
  }
  cv_.notify_one();
}

std::int64_t OutputStreamer::Finish() {
  if (finished_) return dropped_total_;
  SendPending(out_, true);
  SendPending(err_, true);
  finished_ = true;
  {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(kOutputDrainGraceMs),
                 [this] { return queue_.empty(); });
    dropped_ += static_cast<std::int64_t>(queue_.size());
    for (const Chunk& chunk : queue_)
      queued_bytes_ -= static_cast<std::int64_t>(chunk.bytes.size());
    queue_.clear();
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();  // waits for the call in progress, if any
  dropped_total_ = dropped_;
  return dropped_total_;
}

void OutputStreamer::Deliver() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    Chunk chunk = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    bool delivered = true;
    try {
      callback_(OutputChunk{chunk.kind, chunk.bytes});
    } catch (...) {
      delivered = false;  // a callback must not throw; the chunk counts as not streamed
    }
    lock.lock();
    queued_bytes_ -= static_cast<std::int64_t>(chunk.bytes.size());
    if (!delivered) ++dropped_;
    cv_.notify_all();  // Finish may be waiting for the queue to empty
  }
}

std::string DroppedChunksNote(std::int64_t dropped) {
  if (dropped <= 0) return "";
  return std::to_string(dropped) + " output chunk" + (dropped == 1 ? "" : "s") +
         " dropped from the stream: the consumer read too slowly (the result holds all the "
         "output)";
}

}  // namespace codeact::internal
