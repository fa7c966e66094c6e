#include "bridge/worker_frames.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "bridge/frame_codec.hpp"

namespace codeact::internal {
namespace json = boost::json;

NetworkTarget ParseNetworkTarget(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return {text, {}};
  const std::string tail = text.substr(colon + 1);
  std::vector<std::string> methods;
  std::string current;
  for (char c : tail + ",") {
    if (c == ',') {
      if (current.empty()) return {text, {}};
      methods.push_back(current);
      current.clear();
    } else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
      current += static_cast<char>(c >= 'a' ? c - 'a' + 'A' : c);
    } else {
      return {text, {}};
    }
  }
  return {text.substr(0, colon), methods};
}

std::string EncodeConfigureFrame(const WorkerConfig& c) {
  json::array tools;
  for (const auto& t : c.tools) tools.emplace_back(t);
  json::array network;
  for (const auto& text : c.network_targets) {
    const NetworkTarget n = ParseNetworkTarget(text);
    json::object entry{{"target", n.target}, {"methods", nullptr}};
    if (!n.methods.empty()) {
      json::array methods;
      for (const auto& m : n.methods) methods.emplace_back(m);
      entry["methods"] = std::move(methods);
    }
    network.emplace_back(std::move(entry));
  }
  json::object environment;
  for (const auto& [k, v] : c.environment) environment[k] = v;
  json::object frame{
      {"type", "configure"},
      {"fingerprint", c.fingerprint},
      {"tools", std::move(tools)},
      {"input_dir", c.input_dir.empty() ? json::value(nullptr) : json::value(c.input_dir)},
      {"output_dir", c.output_dir},
      {"network", std::move(network)},
      {"environment", std::move(environment)},
      {"cpu_time_s", c.cpu_time_s}};
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
  WorkerReply reply;
  const json::object& f = frames.front();
  if (const json::value* t = f.if_contains("type"); t && t->is_string())
    reply.type = std::string(t->as_string());
  if (const json::value* m = f.if_contains("message"); m && m->is_string()) {
    reply.message = std::string(m->as_string());
  }
  return reply;
}

}  // namespace codeact::internal
