// Bridge frames: newline-delimited compact JSON objects, UTF-8, each at most a byte cap.
// The decoder is fed raw bytes from the child and never trusts them.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/status.hpp"

namespace codeact::internal {

// The member FrameDecoder sets on a tool_call it could not parse (see Feed); never on the wire.
inline constexpr std::string_view kKwargsTooDeep = "kwargs_too_deep";
// The member FrameDecoder sets on every complete frame: the bytes of its "output" value as the
// child wrote them (the runner's compact JSON, which max_output_bytes caps), 0 without one.
// Whatever the child put under that name is replaced; never on the wire.
inline constexpr std::string_view kOutputTextBytes = "output_text_bytes";

class FrameDecoder {
 public:
  explicit FrameDecoder(std::int64_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  // Appends bytes and moves every complete frame into `frames`. A frame over the cap or one
  // that is not a JSON object is an error; the decoder is then finished. A tool_call frame
  // nested deeper than kMaxJsonDepth comes out as {"type":"tool_call","id","name",
  // "kwargs_too_deep":true}, so that the call can be refused rather than the run ended.
  Status Feed(std::string_view bytes, std::vector<boost::json::object>& frames);
  // Bytes of a frame whose newline has not arrived yet.
  bool has_pending() const { return !pending_.empty(); }

 private:
  std::int64_t max_frame_bytes_;
  std::string pending_;
  bool failed_ = false;
};

// Serialises one frame with its terminating newline.
std::string EncodeFrame(const boost::json::object& frame);

}  // namespace codeact::internal
