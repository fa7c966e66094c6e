#include "bridge/frame_codec.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {

Status FrameDecoder::Feed(std::string_view bytes, std::vector<boost::json::object>& frames) {
  if (failed_) return FailedPrecondition("bridge decoder already failed");
  std::size_t start = 0;
  while (start < bytes.size()) {
    const std::size_t nl = bytes.find('\n', start);
    const std::size_t end = nl == std::string_view::npos ? bytes.size() : nl;
    if (static_cast<std::int64_t>(pending_.size() + (end - start)) > max_frame_bytes_) {
      failed_ = true;
      return ResourceExhausted("a bridge frame exceeds the limit of " + std::to_string(max_frame_bytes_) +
                               " bytes");
    }
    pending_.append(bytes.substr(start, end - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
    if (pending_.empty()) continue;
    boost::json::error_code ec;
    boost::json::value v = ParseJson(pending_, ec);
    pending_.clear();
    if (ec == boost::json::error::too_deep) {
      failed_ = true;
      return InvalidArgument("a bridge frame (tool arguments, say) is too deeply nested: " + JsonErrorText(ec));
    }
    if (ec || !v.is_object()) {
      failed_ = true;
      return InvalidArgument("malformed bridge frame" + (ec ? ": " + ec.message() : ": not a JSON object"));
    }
    frames.push_back(std::move(v.as_object()));
  }
  return Status::Ok();
}

std::string EncodeFrame(const boost::json::object& frame) {
  std::string out = SerializeJson(frame);
  out.push_back('\n');
  return out;
}

}  // namespace codeact::internal
