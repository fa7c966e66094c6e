#include "protocol/worker_frames.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <variant>

#include "protocol/frame_codec.hpp"
#include "protocol/frames.hpp"
#include "protocol/protocol.hpp"

namespace codeact::internal {
namespace json = boost::json;

std::string EncodeConfigureFrame(const WorkerConfig& c) {
  namespace field = protocol::field;
  json::array tools;
  for (const auto& t : c.tools) tools.emplace_back(t);
  json::array network;
  for (const EgressTarget& n : c.network_targets) {
    json::object entry{{field::kTarget, n.Url()}, {field::kMethods, nullptr}};
    if (!n.methods.empty()) {
      json::array methods;
      for (const auto& m : n.methods) methods.emplace_back(m);
      entry[field::kMethods] = std::move(methods);
    }
    network.emplace_back(std::move(entry));
  }
  json::object environment;
  for (const auto& [k, v] : c.environment) environment[k] = v;
  json::object frame{
      {field::kType, protocol::Name(protocol::MessageType::kConfigure)},
      {field::kFingerprint, c.fingerprint},
      {field::kTools, std::move(tools)},
      {field::kInputDir, c.input_dir.empty() ? json::value(nullptr) : json::value(c.input_dir)},
      {field::kOutputDir, c.output_dir},
      {field::kNetwork, std::move(network)},
      {field::kEnvironment, std::move(environment)},
      {field::kCpuTimeS, c.cpu_time_s},
      {field::kHeapSize, c.heap_size},
      {field::kStackSize, c.stack_size},
      {field::kMaxFileSizeBytes, c.max_file_size_bytes}};
  return EncodeFrame(frame);
}

StatusOr<WorkerReply> ReadWorkerReply(int fd, std::chrono::steady_clock::time_point deadline,
                                      std::int64_t max_frame_bytes) {
  FrameDecoder decoder(max_frame_bytes);
  std::vector<json::object> frames;
  char buf[4096];
  while (frames.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return DeadlineExceeded("the hyperlight worker did not answer in time");
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(std::min<std::int64_t>(left, 60'000)));
    if (ready < 0 && errno != EINTR) return Internal("poll on the worker's bridge failed");
    if (ready <= 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) return Unavailable("the hyperlight worker exited");
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return Unavailable("cannot read from the hyperlight worker");
    }
    if (Status s = decoder.Feed(std::string_view(buf, static_cast<std::size_t>(n)), frames);
        !s.ok()) {
      return InvalidArgument("bad frame from the hyperlight worker: " + s.message());
    }
    // The worker sends one frame and waits: anything after it is a broken worker.
    if (frames.size() > 1 || (!frames.empty() && buf[n - 1] != '\n')) {
      return InvalidArgument("the hyperlight worker sent more than one frame");
    }
  }
  StatusOr<protocol::ChildFrame> frame = protocol::DecodeChildFrame(std::move(frames.front()));
  if (!frame.ok())
    return InvalidArgument("bad frame from the hyperlight worker: " + frame.status().message());
  WorkerReply reply;
  if (std::holds_alternative<protocol::ReadyFrame>(*frame)) {
    reply.type = protocol::Name(protocol::MessageType::kReady);
  } else if (std::holds_alternative<protocol::ConfiguredFrame>(*frame)) {
    reply.type = protocol::Name(protocol::MessageType::kConfigured);
  } else if (const auto* unavailable = std::get_if<protocol::UnavailableFrame>(&*frame)) {
    reply.type = protocol::Name(protocol::MessageType::kUnavailable);
    reply.message = unavailable->message;
  } else if (const auto* unknown = std::get_if<protocol::UnknownFrame>(&*frame)) {
    reply.type = unknown->type;
  } else {
    reply.type = "another frame";  // a bridge frame of the run, out of place here
  }
  return reply;
}

}  // namespace codeact::internal
