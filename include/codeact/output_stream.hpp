// Streamed output: what a run prints, handed to the caller while the run goes on
// (ExecutionRequest::on_output, InvokeOptions::on_output).
//
// The chunks are the very bytes the result's `stdout`/`stderr` end up with, in order per
// stream: their concatenation is what the run kept, so they stop at the same caps
// (ExecutionLimits::max_stdout_bytes, max_stderr_bytes; nothing past a cap is streamed). A chunk
// holds at most kOutputChunkMaxBytes and, while output is pending, one is sent at least every
// kOutputChunkIntervalMs. A chunk never ends inside a UTF-8 sequence unless the run's last output
// did. The order between stdout and stderr chunks is the order the host read them, not
// necessarily the order the code wrote them (they are two pipes).
//
// The callback runs on a thread of the run's own, never on the caller's, one call at a time, and
// every call returns before Execute does. A slow callback holds back only the chunks, never the
// run: past kMaxQueuedOutputBytes queued, chunks are dropped, and the result's `message` says how
// many. After the run ends, chunks still queued are delivered for up to kOutputDrainGraceMs;
// the rest are dropped and counted the same way. A callback that blocks forever holds Execute
// forever: it must return. It must not throw (an exception is caught and the chunk counted as
// dropped).
//
// Backends: the local backend streams as the child writes, at both isolation levels, for
// one-shot, pooled and session runs. The hyperlight backend has the guest's output only when
// the guest returns (its worker writes it then, before the terminal frame): its chunks all come
// at the run's end, still before Execute returns.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace codeact {

enum class OutputStreamKind { kStdout, kStderr };

std::string_view OutputStreamKindName(OutputStreamKind kind);  // "stdout", "stderr"

struct OutputChunk {
  OutputStreamKind stream = OutputStreamKind::kStdout;
  std::string_view data;  // valid for the duration of the call only
};

using OutputCallback = std::function<void(const OutputChunk&)>;

inline constexpr std::int64_t kOutputChunkMaxBytes = 64 << 10;  // 64 KiB
inline constexpr std::int64_t kOutputChunkIntervalMs = 100;
// What may wait for a slow callback before chunks are dropped.
inline constexpr std::int64_t kMaxQueuedOutputBytes = 256 << 10;  // 256 KiB
inline constexpr std::int64_t kOutputDrainGraceMs = 1000;

}  // namespace codeact
