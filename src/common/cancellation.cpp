// CancellationSource/Token (cancellation.hpp) over std::stop_source, which already gives the
// guarantees the header promises: callbacks run once, at registration when already stopped, and
// a callback's deregistration waits for it when it is running in another thread.
#include "codeact/cancellation.hpp"

#include <mutex>
#include <stop_token>

namespace codeact {
namespace internal {

struct CancellationState {
  std::stop_source source;
  mutable std::mutex mu;
  std::string reason;
  bool claimed = false;  // a Cancel call won; its reason stays
};

struct CancellationCallbackImpl {
  CancellationCallbackImpl(std::stop_token token, std::function<void()> fn)
      : callback(std::move(token), std::move(fn)) {}
  std::stop_callback<std::function<void()>> callback;
};

}  // namespace internal

CancellationRegistration::CancellationRegistration() = default;
CancellationRegistration::~CancellationRegistration() = default;
CancellationRegistration::CancellationRegistration(CancellationRegistration&&) noexcept = default;
CancellationRegistration& CancellationRegistration::operator=(CancellationRegistration&&) noexcept =
    default;

bool CancellationToken::cancelled() const {
  return state_ != nullptr && state_->source.stop_requested();
}

std::string CancellationToken::reason() const {
  if (state_ == nullptr) return {};
  std::lock_guard lock(state_->mu);
  return state_->reason;
}

CancellationRegistration CancellationToken::OnCancel(std::function<void()> callback) const {
  CancellationRegistration registration;
  if (state_ == nullptr || !callback) return registration;  // never cancelled: nothing to run
  registration.impl_ = std::make_unique<internal::CancellationCallbackImpl>(
      state_->source.get_token(), std::move(callback));
  return registration;
}

CancellationSource::CancellationSource()
    : state_(std::make_shared<internal::CancellationState>()) {}

CancellationToken CancellationSource::token() const { return CancellationToken(state_); }

bool CancellationSource::Cancel(const std::string& reason) {
  {
    std::lock_guard lock(state_->mu);
    if (state_->claimed) return false;
    state_->claimed = true;
    // Set before request_stop, so whoever sees cancelled() also sees the reason.
    state_->reason = reason;
  }
  return state_->source.request_stop();
}

bool CancellationSource::cancelled() const { return state_->source.stop_requested(); }

}  // namespace codeact
