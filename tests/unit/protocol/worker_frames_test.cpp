// The hyperlight worker's control frames: the configure frame (network targets as URLs), and
// reading one untrusted reply from an in-process pipe.
#include "protocol/worker_frames.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>

#include "common/egress_target.hpp"

namespace codeact::internal {
namespace {

using namespace std::chrono_literals;
namespace bj = boost::json;

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { EXPECT_EQ(pipe(fds), 0); }
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  void Write(const std::string& s) {
    ASSERT_EQ(write(fds[1], s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  void CloseWriter() {
    close(fds[1]);
    fds[1] = -1;
  }
};

StatusOr<WorkerReply> Read(Pipe& p, std::chrono::milliseconds timeout = 2000ms) {
  return ReadWorkerReply(p.fds[0], std::chrono::steady_clock::now() + timeout, 1024);
}

TEST(WorkerFramesTest, ConfigureFrameCarriesEverythingTheWorkerNeeds) {
  WorkerConfig c;
  c.fingerprint = "f1";
  c.tools = {"add"};
  c.output_dir = "/tmp/o";
  c.network_targets = {*ParseEgressTarget("a.com:GET"), *ParseEgressTarget("http://b.com:81")};
  c.heap_size = "900Ki";
  c.stack_size = "100Ki";
  c.max_file_size_bytes = 4096;
  c.environment = {{"K", "V"}};
  c.cpu_time_s = 7;
  const std::string frame = EncodeConfigureFrame(c);
  ASSERT_EQ(frame.back(), '\n');
  const bj::value v = bj::parse(frame);
  EXPECT_EQ(v.at("type").as_string(), "configure");
  EXPECT_TRUE(v.at("input_dir").is_null());
  EXPECT_EQ(v.at("network"), bj::parse(R"([{"target":"https://a.com","methods":["GET"]},)"
                                       R"({"target":"http://b.com:81","methods":null}])"));
  EXPECT_EQ(v.at("heap_size").as_string(), "900Ki");
  EXPECT_EQ(v.at("stack_size").as_string(), "100Ki");
  EXPECT_EQ(v.at("max_file_size_bytes").as_int64(), 4096);
  EXPECT_EQ(v.at("environment"), bj::parse(R"({"K":"V"})"));
  EXPECT_EQ(v.at("cpu_time_s").as_int64(), 7);
}

TEST(WorkerFramesTest, ReadsOneReply) {
  Pipe p;
  p.Write("{\"type\":\"unavailable\",\"message\":\"no /dev/kvm\"}\n");
  auto r = Read(p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->type, "unavailable");
  EXPECT_EQ(r->message, "no /dev/kvm");
}

TEST(WorkerFramesTest, UntrustedRepliesEndAsStatuses) {
  {
    Pipe p;
    p.Write("not json\n");
    EXPECT_EQ(Read(p).status().code(), StatusCode::kInvalidArgument);
  }
  {
    Pipe p;
    p.Write("{\"type\":\"ready\"}\n{\"type\":\"ready\"}\n");
    EXPECT_EQ(Read(p).status().code(), StatusCode::kInvalidArgument);
  }
  {
    Pipe p;
    p.Write("{\"type\":\"ready\",\"pad\":\"" + std::string(2000, 'x') + "\"}\n");
    EXPECT_EQ(Read(p).status().code(), StatusCode::kInvalidArgument);
  }
  {
    Pipe p;
    p.Write("{\"type\":");
    p.CloseWriter();
    EXPECT_EQ(Read(p).status().code(), StatusCode::kUnavailable);
  }
  {
    Pipe p;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(Read(p, 100ms).status().code(), StatusCode::kDeadlineExceeded);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  }
  {
    Pipe p;
    // A frame of the wrong shape is refused by name (protocol/frames.hpp), not read as empty.
    p.Write("{\"type\":5,\"message\":[1]}\n");
    auto r = Read(p);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              "bad frame from the hyperlight worker: malformed frame from the child: \"type\" must "
              "be a string");
  }
  {
    Pipe p;
    p.Write("{\"type\":\"unavailable\",\"message\":[1]}\n");
    EXPECT_EQ(Read(p).status().message(),
              "bad frame from the hyperlight worker: malformed unavailable frame from the child: "
              "\"message\" must "
              "be a string");
  }
}

}  // namespace
}  // namespace codeact::internal
