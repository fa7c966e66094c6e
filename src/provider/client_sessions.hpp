// ClientSessions: the named sessions of one client — one MCP connection (or, later, one HTTP
// token) — behind execute_code's optional "session" argument. Names are this object's alone: no
// client can reach another's session. A new name opens a session on its first use; a call
// without a name runs stateless, as ExecuteCodeFunction does. Destroying it closes every session
// it opened (the connection ended).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "codeact/provider.hpp"
#include "codeact/session.hpp"
#include "provider/session_handles.hpp"

namespace codeact::internal {

class ClientSessions {
 public:
  // How a new named session is opened; empty: provider->OpenSession. A server passes one that
  // holds the client's caller to its share of the provider's sessions.
  using Opener = std::function<StatusOr<std::shared_ptr<Session>>(const SessionOptions& options)>;

  explicit ClientSessions(std::shared_ptr<CodeActProvider> provider, Opener open = nullptr)
      : provider_(provider), open_(std::move(open)), function_(std::move(provider)) {}
  ~ClientSessions();
  ClientSessions(const ClientSessions&) = delete;
  ClientSessions& operator=(const ClientSessions&) = delete;

  // The execute_code definition with the "session" argument. Listing the tools is when the
  // client learns the configuration: the stateless function is refreshed to the provider's
  // current snapshot, and calls without a session run under the snapshot last listed.
  std::string Definition(DefinitionFormat format) const;

  // `arguments_json` is {"code": "...", "session": "name"?}. With a name the result carries
  // `session` and `session_state`; a name whose session expired gets a new one ("new", and a
  // `message` saying the earlier one expired). Bad arguments and sessions that cannot be opened
  // come back as results, never as exceptions.
  ExecutionResult Invoke(const std::string& arguments_json, const InvokeOptions& options);

  // The same under MCP's stateless revision, where `owner` is the caller and "session" is a
  // handle (session_handles.hpp): a value with the handle's prefix must open with `signer` for
  // `owner` (else the result is an argument error saying why, and nothing runs); any other value
  // opens a new session whose handle the result's `session` carries. Without "session" the run
  // is stateless, as in Invoke.
  ExecutionResult InvokeWithHandle(const std::string& arguments_json, const InvokeOptions& options,
                                   const SessionHandleSigner& signer, const std::string& owner);

  // Sessions this client holds now, expired ones included until their name is used again.
  std::size_t size() const;
  // Sessions this client holds that are still open.
  std::size_t OpenCount() const;

 private:
  // The open session of `name`, or a new one (`note` then says why the earlier one, which the
  // client calls `shown_as`, is gone).
  StatusOr<std::shared_ptr<Session>> Find(const std::string& name, const std::string& shown_as,
                                          std::string& note);
  // Runs `code` in the session `name` (opened on first use); the result names `shown_as`.
  ExecutionResult RunNamed(const std::string& name, const std::string& shown_as,
                           const std::string& code, const InvokeOptions& options);

  const std::shared_ptr<CodeActProvider> provider_;
  const Opener open_;
  mutable ExecuteCodeFunction function_;  // thread-safe; Refresh() is its only mutation
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> by_name_;
};

}  // namespace codeact::internal
