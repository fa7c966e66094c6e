// CancellationSource and CancellationToken: asking work in flight (a run, a tool call) to stop.
// The owner of the work keeps the source; the work gets tokens, checks `cancelled()` where it
// polls anyway and registers a callback with OnCancel to be woken from a blocking wait. The
// first Cancel wins and its reason stays; later calls change nothing. A default-constructed
// token is never cancelled, so every API that takes one works unchanged without it.
//
// Used by ExecutionRequest/InvokeOptions (a run ends with outcome `cancelled`), by the MCP
// server (shutdown, and `notifications/cancelled`) and by tool handlers (ToolCallContext).
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace codeact {

namespace internal {
struct CancellationState;
struct CancellationCallbackImpl;
}  // namespace internal

// Keeps a callback registered with CancellationToken::OnCancel; destroying it unregisters the
// callback, waiting for it to return if it is running in another thread right then.
class [[nodiscard]] CancellationRegistration {
 public:
  CancellationRegistration();
  ~CancellationRegistration();
  CancellationRegistration(CancellationRegistration&&) noexcept;
  CancellationRegistration& operator=(CancellationRegistration&&) noexcept;
  CancellationRegistration(const CancellationRegistration&) = delete;
  CancellationRegistration& operator=(const CancellationRegistration&) = delete;

 private:
  friend class CancellationToken;
  std::unique_ptr<internal::CancellationCallbackImpl> impl_;
};

class CancellationToken {
 public:
  CancellationToken() = default;  // never cancelled

  bool cancelled() const;
  // Why, as given to Cancel ("the server is shutting down"); empty until cancelled.
  std::string reason() const;

  // Runs `callback` once when the token is cancelled: at once, in this thread, when it already
  // is; otherwise in the thread that calls Cancel. Keep callbacks short and non-blocking (wake
  // a poll, send a signal), and never register or unregister on the same token inside one.
  CancellationRegistration OnCancel(std::function<void()> callback) const;

 private:
  friend class CancellationSource;
  explicit CancellationToken(std::shared_ptr<internal::CancellationState> state)
      : state_(std::move(state)) {}
  std::shared_ptr<internal::CancellationState> state_;
};

class CancellationSource {
 public:
  CancellationSource();
  CancellationToken token() const;
  // Cancels every token of this source and runs their callbacks (in this thread). Returns false
  // when it was cancelled already (the first reason stays).
  bool Cancel(const std::string& reason);
  bool cancelled() const;

 private:
  std::shared_ptr<internal::CancellationState> state_;
};

}  // namespace codeact
