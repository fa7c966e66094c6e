// The protocol defined once (protocol/protocol.hpp): the host's table against the child side's
// copy (resources/codeact_protocol.py), the typed bridge frames (protocol/frames.hpp) and the fork
// server's messages (protocol/fork_messages.hpp): round trips, and malformed input refused with a
// message that names what is wrong.
#include "protocol/protocol.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdio>
#include <set>
#include <string>
#include <utility>

#include "common/data_dir.hpp"
#include "json/serialize.hpp"
#include "protocol/fork_messages.hpp"
#include "protocol/frames.hpp"

namespace codeact::internal::protocol {
namespace {

namespace bj = boost::json;

constexpr char kPython[] = "/usr/bin/python3.11";

// The child side's table, as resources/codeact_protocol.py exports it, read by the interpreter
// the children run on, started as they are (-I -S: nothing but the module's own directory).
std::string PythonTable() {
  const std::string resources = DefaultDataDir() + "/resources";
  const std::string command = std::string(kPython) +
                              " -I -S -c 'import sys, json; sys.dont_write_bytecode = True; "
                              "sys.path.append(sys.argv[1]); import codeact_protocol as p; "
                              "print(json.dumps(p.table_json()))' '" +
                              resources + "'";
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
    EXPECT_EQ(::pclose(pipe), 0) << command;
  }
  return out;
}

TEST(ProtocolTest, ThePythonModuleAgreesWithTheHostsTable) {
  const std::string text = PythonTable();
  ASSERT_FALSE(text.empty());
  const bj::value python = bj::parse(text);
  const bj::object host = bj::parse(ProtocolTableJson()).as_object();
  // Message by message first, so that a disagreement names its message.
  const bj::object& messages = python.at("messages").as_object();
  for (const auto& [name, spec] : host.at("messages").as_object()) {
    ASSERT_TRUE(messages.contains(name)) << "codeact_protocol.py lacks the message " << name;
    EXPECT_EQ(messages.at(name), spec) << "the message " << name << " differs";
  }
  for (const auto& [name, spec] : messages) {
    EXPECT_TRUE(host.at("messages").as_object().contains(name))
        << "protocol.hpp lacks the message " << name;
  }
  EXPECT_EQ(python, bj::value(host)) << "host: " << ProtocolTableJson() << "\npython: " << text;
}

TEST(ProtocolTest, EveryMessageHasOneNameAndItsFieldsAreDistinct) {
  std::set<std::pair<Channel, std::string_view>> names;
  for (const MessageSpec& spec : MessageTable()) {
    EXPECT_TRUE(names.insert({spec.channel, spec.name}).second) << spec.name;
    EXPECT_EQ(&Spec(spec.type), &spec);
    EXPECT_EQ(FindMessage(spec.channel, spec.name), &spec);
    std::set<std::string_view> fields;
    for (std::string_view f : spec.required)
      EXPECT_TRUE(fields.insert(f).second) << spec.name << "." << f;
    for (std::string_view f : spec.optional)
      EXPECT_TRUE(fields.insert(f).second) << spec.name << "." << f;
    EXPECT_FALSE(fields.contains(field::kType)) << spec.name;
  }
  EXPECT_EQ(FindMessage(Channel::kBridge, "note"), nullptr);
  EXPECT_EQ(FindMessage(Channel::kForkServer, "tool_call"), nullptr);
}

// --- bridge frames -------------------------------------------------------------------------------

StatusOr<ChildFrame> Decode(std::string_view text) {
  return DecodeChildFrame(bj::parse(text).as_object());
}

std::string DecodeError(std::string_view text) {
  const StatusOr<ChildFrame> frame = Decode(text);
  EXPECT_FALSE(frame.ok()) << text;
  if (frame.ok()) return "";
  EXPECT_EQ(frame.status().code(), StatusCode::kInvalidArgument);
  return frame.status().message();
}

TEST(ProtocolTest, HostFramesAreEncodedInOnePlace) {
  const RuntimeGuardSpec guard{{"/usr"}, {}, {"/work"}, "", {3, 4}, {"math"}};
  EXPECT_EQ(EncodeRequest({"print(1)", {"add"}, 10, 20, 30, nullptr}),
            R"j({"type":"request","code":"print(1)","tools":["add"],"max_output_bytes":10,)j"
            R"j("max_frame_bytes":20,"max_tool_calls":30})j"
            "\n");
  EXPECT_NE(EncodeRequest({"x", {}, 1, 2, 3, &guard}).find(R"("guard":{"exec":["/usr"],)"),
            std::string::npos);
  RequestFrame as_armed{"x", {}, 1, 2, 3, &guard};
  as_armed.guard_as_armed = true;
  EXPECT_EQ(EncodeRequest(as_armed),
            R"j({"type":"request","code":"x","tools":[],"max_output_bytes":1,)j"
            R"j("max_frame_bytes":2,"max_tool_calls":3,"guard":"armed"})j"
            "\n");
  EXPECT_EQ(EncodeGuard(guard, /*with_imports=*/false),
            R"({"exec":["/usr"],"read":[],"write":["/work"],"bridge_fds":[3,4],"type":"guard"})"
            "\n");
  EXPECT_EQ(EncodeGuard(guard, /*with_imports=*/true),
            R"({"exec":["/usr"],"read":[],"write":["/work"],"bridge_fds":[3,4],)"
            R"("imports":["math"],"type":"guard"})"
            "\n");
  EXPECT_EQ(EncodeToolSuccess(7, bj::value{1, "a"}),
            R"({"type":"tool_result","id":7,"ok":true,"result":[1,"a"]})"
            "\n");
  EXPECT_EQ(
      EncodeToolFailure(8, "UnknownTool", "no tool named \"x\""),
      R"({"type":"tool_result","id":8,"ok":false,"error_type":"UnknownTool","message":"no tool named \"x\""})"
      "\n");
}

TEST(ProtocolTest, ChildFramesDecodeIntoTheirTypes) {
  auto call = Decode(R"({"type":"tool_call","id":3,"name":"add","kwargs":{"a":1}})");
  ASSERT_TRUE(call.ok()) << call.status().message();
  const auto& c = std::get<ToolCallFrame>(*call);
  EXPECT_EQ(c.id, 3);
  EXPECT_EQ(c.name, "add");
  EXPECT_EQ(SerializeJson(c.kwargs), R"({"a":1})");
  EXPECT_FALSE(c.kwargs_too_deep);
  EXPECT_TRUE(
      std::get<ToolCallFrame>(*Decode(R"({"type":"tool_call","id":1,"name":"t"})")).kwargs.empty());

  auto complete = Decode(R"({"type":"complete","output_present":true,"output":{"k":[1.5]}})");
  EXPECT_EQ(std::get<CompleteFrame>(*complete).output_json, R"({"k":[1.5]})");
  EXPECT_EQ(
      std::get<CompleteFrame>(*Decode(R"({"type":"complete","output_present":false,"output":1})"))
          .output_json,
      "null");
  const auto error =
      std::get<ErrorFrame>(*Decode(R"({"type":"error","error_type":"E","message":"m"})"));
  EXPECT_EQ(error.error_type, "E");
  EXPECT_EQ(error.traceback, "");
  EXPECT_EQ(
      std::get<LimitFrame>(*Decode(R"({"type":"limit","limit":"output","message":"big"})")).message,
      "big");
  EXPECT_TRUE(
      std::holds_alternative<ReadyFrame>(*Decode(R"({"type":"ready","python":[3,11],"pid":9})")));
  EXPECT_EQ(std::get<SetupErrorFrame>(*Decode(R"({"type":"setup_error","step":"s","message":"m"})"))
                .message,
            "m");
  EXPECT_EQ(std::get<GuardErrorFrame>(*Decode(R"({"type":"guard_error","message":"g"})")).message,
            "g");
  EXPECT_TRUE(std::get<ConfiguredFrame>(*Decode(R"({"type":"configured","reused":true})")).reused);
  EXPECT_EQ(std::get<UnavailableFrame>(*Decode(R"({"type":"unavailable","message":"u"})")).message,
            "u");
  // Unknown types, and the host's own, are the receiver's to ignore.
  EXPECT_EQ(std::get<UnknownFrame>(*Decode(R"({"type":"note","x":1})")).type, "note");
  EXPECT_EQ(std::get<UnknownFrame>(*Decode(R"({"type":"request","code":1})")).type, "request");
}

TEST(ProtocolTest, MalformedChildFramesAreRefusedByName) {
  EXPECT_EQ(DecodeError(R"({"id":1})"),
            "malformed frame from the child: \"type\" must be a string");
  EXPECT_EQ(DecodeError(R"({"type":["tool_call"]})"),
            "malformed frame from the child: \"type\" must be a string");
  EXPECT_EQ(DecodeError(R"({"type":"tool_call","id":"x","name":"t"})"),
            "malformed tool_call frame from the child: \"id\" must be an integer");
  EXPECT_EQ(DecodeError(R"({"type":"tool_call","id":1.5,"name":"t"})"),
            "malformed tool_call frame from the child: \"id\" must be an integer");
  EXPECT_EQ(DecodeError(R"({"type":"tool_call","name":"t"})"),
            "malformed tool_call frame from the child: \"id\" is missing");
  EXPECT_EQ(DecodeError(R"({"type":"tool_call","id":1})"),
            "malformed tool_call frame from the child: \"name\" is missing");
  EXPECT_EQ(DecodeError(R"({"type":"tool_call","id":1,"name":"t","kwargs":[1]})"),
            "malformed tool_call frame from the child: \"kwargs\" must be an object");
  EXPECT_EQ(DecodeError(R"({"type":"complete","output_present":"yes"})"),
            "malformed complete frame from the child: \"output_present\" must be a boolean");
  EXPECT_EQ(DecodeError(R"({"type":"complete"})"),
            "malformed complete frame from the child: \"output_present\" is missing");
  EXPECT_EQ(DecodeError(R"({"type":"error","error_type":1,"message":"m"})"),
            "malformed error frame from the child: \"error_type\" must be a string");
  EXPECT_EQ(DecodeError(R"({"type":"limit"})"),
            "malformed limit frame from the child: \"message\" is missing");
  EXPECT_EQ(DecodeError(R"({"type":"guard_error","message":null})"),
            "malformed guard_error frame from the child: \"message\" must be a string");
}

// --- fork server messages ------------------------------------------------------------------------

TEST(ProtocolTest, ForkMessagesRoundTripThroughTheirJson) {
  EXPECT_EQ(EncodeFork({"0123abcd", 1234, 1 << 20, "/tmp/codeact-run-x/work"}),
            R"({"type":"fork","token":"0123abcd","uid":1234,"workdir_bytes":1048576,)"
            R"("workdir":"/tmp/codeact-run-x/work"})");
  EXPECT_EQ(EncodeFork({"0123abcd", 1234, 1 << 20, "/work", 1 << 10, 4}),
            R"({"type":"fork","token":"0123abcd","uid":1234,"workdir_bytes":1048576,)"
            R"("workdir":"/work","tmp_bytes":1024,"cgroup_fds":4})");
  // A process-level child joins its cgroup through fds too, with no /tmp of its own.
  EXPECT_EQ(EncodeFork({"0123abcd", -1, 0, "/w", 0, 4}),
            R"({"type":"fork","token":"0123abcd","uid":-1,"workdir_bytes":0,)"
            R"("workdir":"/w","cgroup_fds":4})");
  EXPECT_EQ(EncodeKill(42), R"({"type":"kill","pid":42})");
  auto ready = DecodeZygoteMessage(R"({"type":"zygote_ready","pid":7})");
  ASSERT_TRUE(ready.ok()) << ready.status().message();
  EXPECT_EQ(std::get<ZygoteReady>(*ready).pid, 7);
  EXPECT_EQ(std::get<Forked>(*DecodeZygoteMessage(R"({"type":"forked","pid":8})")).pid, 8);
  EXPECT_EQ(
      std::get<ForkFailed>(*DecodeZygoteMessage(R"({"type":"fork_failed","message":"EAGAIN"})"))
          .message,
      "EAGAIN");
  const auto exited = std::get<Exited>(
      *DecodeZygoteMessage(R"({"type":"exited","pid":9,"status":256,"cpu_us":12})"));
  EXPECT_EQ(exited.pid, 9);
  EXPECT_EQ(exited.status, 256);
  EXPECT_EQ(exited.cpu_us, 12);
}

TEST(ProtocolTest, MalformedZygoteMessagesAreRefusedByName) {
  auto error = [](std::string_view text) {
    const auto m = DecodeZygoteMessage(text);
    EXPECT_FALSE(m.ok()) << text;
    return m.ok() ? std::string() : m.status().message();
  };
  EXPECT_EQ(error("P 123"), "malformed fork server message: not JSON (syntax error)");
  EXPECT_EQ(error("[1]"), "malformed fork server message: not a JSON object");
  EXPECT_EQ(error(R"({"pid":1})"), "malformed fork server message: \"type\" must be a string");
  EXPECT_EQ(error(R"({"type":"ready","pid":1})"),
            "malformed fork server message: unknown type \"ready\"");
  EXPECT_EQ(error(R"({"type":"forked"})"),
            "malformed fork server message: forked: \"pid\" is missing");
  EXPECT_EQ(error(R"({"type":"forked","pid":"12"})"),
            "malformed fork server message: forked: \"pid\" must be an integer");
  EXPECT_EQ(error(R"({"type":"forked","pid":0})"),
            "malformed fork server message: forked: \"pid\" must be positive");
  EXPECT_EQ(error(R"({"type":"exited","pid":3,"status":0})"),
            "malformed fork server message: exited: \"cpu_us\" is missing");
  EXPECT_EQ(error(R"({"type":"fork_failed","message":5})"),
            "malformed fork server message: fork_failed: \"message\" must be a string");
  EXPECT_EQ(error(R"({"type":"kill","pid":3})"),
            "malformed fork server message: \"kill\" is the host's message, not the zygote's");
}

}  // namespace
}  // namespace codeact::internal::protocol
