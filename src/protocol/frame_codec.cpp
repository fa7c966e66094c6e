#include "protocol/frame_codec.hpp"

#include <charconv>
#include <optional>

#include "json/raw_json.hpp"
#include "json/serialize.hpp"
#include "protocol/protocol.hpp"

namespace codeact::internal {
namespace {

// A tool call whose arguments nest too deeply to parse still deserves an answer the code can
// catch, not the end of its run: its type, id and name are at the top of the frame, shallow.
// Returns {"type":"tool_call","id":N,"name":...,"kwargs_too_deep":true}, or nothing when the
// frame does not look like a tool call with an integer id.
std::optional<boost::json::object> TooDeepToolCall(std::string_view frame) {
  const auto type = RawMember(frame, protocol::field::kType);
  const auto id = RawMember(frame, protocol::field::kId);
  if (!type ||
      *type != "\"" + std::string(protocol::Name(protocol::MessageType::kToolCall)) + "\"" || !id) {
    return std::nullopt;
  }
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(id->data(), id->data() + id->size(), n);
  if (ec != std::errc() || end != id->data() + id->size()) return std::nullopt;
  boost::json::object call{
      {protocol::field::kType, protocol::Name(protocol::MessageType::kToolCall)},
      {protocol::field::kId, n},
      {kKwargsTooDeep, true}};
  if (const auto name = RawMember(frame, protocol::field::kName)) {
    boost::json::error_code name_ec;
    const boost::json::value v = ParseJson(*name, name_ec);
    if (!name_ec && v.is_string()) call[protocol::field::kName] = v.as_string();
  }
  return call;
}

// A complete frame's output size as the child wrote it (kOutputTextBytes): its value re-serialised
// by the host may differ in length (number formats, escapes), and the cap is on what was sent.
void MarkOutputSize(std::string_view frame_text, boost::json::object& frame) {
  const boost::json::value* type = frame.if_contains(protocol::field::kType);
  if (type == nullptr || !type->is_string() ||
      type->get_string() != protocol::Name(protocol::MessageType::kComplete)) {
    return;
  }
  const auto output = RawMember(frame_text, protocol::field::kOutput);
  frame[kOutputTextBytes] = output ? static_cast<std::int64_t>(output->size()) : 0;
}

}  // namespace

Status FrameDecoder::Feed(std::string_view bytes, std::vector<boost::json::object>& frames) {
  if (failed_) return FailedPrecondition("bridge decoder already failed");
  std::size_t start = 0;
  while (start < bytes.size()) {
    const std::size_t nl = bytes.find('\n', start);
    const std::size_t end = nl == std::string_view::npos ? bytes.size() : nl;
    if (static_cast<std::int64_t>(pending_.size() + (end - start)) > max_frame_bytes_) {
      failed_ = true;
      return ResourceExhausted("a bridge frame exceeds the limit of " +
                               std::to_string(max_frame_bytes_) + " bytes");
    }
    pending_.append(bytes.substr(start, end - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
    if (pending_.empty()) continue;
    boost::json::error_code ec;
    boost::json::value v = ParseJson(pending_, ec);
    std::optional<boost::json::object> too_deep_call;
    if (ec == boost::json::error::too_deep) too_deep_call = TooDeepToolCall(pending_);
    if (!ec && v.is_object()) MarkOutputSize(pending_, v.as_object());
    pending_.clear();
    if (ec == boost::json::error::too_deep) {
      if (too_deep_call) {
        frames.push_back(std::move(*too_deep_call));
        continue;
      }
      failed_ = true;
      return InvalidArgument("a bridge frame is too deeply nested: " + JsonErrorText(ec));
    }
    if (ec || !v.is_object()) {
      failed_ = true;
      return InvalidArgument("malformed bridge frame" +
                             (ec ? ": " + ec.message() : ": not a JSON object"));
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
