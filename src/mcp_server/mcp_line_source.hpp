// LineSource: where the stdio MCP server's request lines come from — a stream (tests,
// McpServer::Serve(std::istream&)) or a descriptor that is polled together with a stop
// descriptor (McpServer::Serve(int, ...), `codeact mcp`). A line is held to a cap while it is
// read: the rest of a longer one is read and dropped, never buffered.
//
// Internal (codeact::internal); the library's public API does not include it.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

namespace codeact::internal {

class LineSource {
 public:
  enum class Next { kLine, kEnd, kStop };
  virtual ~LineSource() = default;
  // After kStop: how many stop requests had arrived (two or more: cancel at once).
  int stop_requests() const { return stop_requests_; }
  // One line of at most the cap, without its newline; `oversized` when it was longer (then
  // `line` is empty: the rest was read and dropped). A last line without a newline counts.
  virtual Next Read(std::string& line, bool& oversized) = 0;

 protected:
  int stop_requests_ = 0;
};

class StreamSource final : public LineSource {
 public:
  StreamSource(std::istream& in, std::size_t cap) : in_(in), cap_(cap) {}
  Next Read(std::string& line, bool& oversized) override;

 private:
  std::istream& in_;
  const std::size_t cap_;
};

// Reads `fd` and watches `stop_fd` (-1: none); a stop request wins over input that arrived at
// the same time, and its bytes are consumed.
class FdSource final : public LineSource {
 public:
  FdSource(int fd, int stop_fd, std::size_t cap) : fd_(fd), stop_fd_(stop_fd), cap_(cap) {}
  Next Read(std::string& line, bool& oversized) override;

 private:
  Next Deliver(std::string& line, bool& oversized);

  const int fd_;
  const int stop_fd_;
  const std::size_t cap_;
  std::string buf_;
  std::size_t start_ = 0;
  std::string line_;
  bool oversized_ = false;
  bool partial_ = false;
  bool eof_ = false;
};

// Reads one line of at most `cap` bytes without ever holding more than `cap` bytes of it: the
// rest of a longer line is read and dropped. Returns false at end of input with nothing read.
bool ReadCappedLine(std::istream& in, std::size_t cap, std::string& line, bool& oversized);

// Consumes whatever is readable on a non-blocking or polled descriptor; returns how many bytes
// (each stop request is one byte).
int DrainFd(int fd);

}  // namespace codeact::internal
