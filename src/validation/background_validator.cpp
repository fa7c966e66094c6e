#include "validation/background_validator.hpp"

#include <chrono>
#include <future>

#include "common/data_dir.hpp"

namespace codeact::internal {

struct BackgroundValidator::State {
  std::shared_future<StatusOr<std::shared_ptr<Validator>>> embedded;
};

BackgroundValidator::BackgroundValidator(std::launch when) : state_(std::make_unique<State>()) {
  state_->embedded = std::async(when, [] { return Validator::Embedded(); }).share();
}

// The start's thread is joined here (the last copy of a std::async future waits for it).
BackgroundValidator::~BackgroundValidator() = default;

std::shared_ptr<BackgroundValidator> BackgroundValidator::Start() {
  return std::shared_ptr<BackgroundValidator>(new BackgroundValidator(std::launch::async));
}

std::shared_ptr<BackgroundValidator> BackgroundValidator::OnFirstUse() {
  return std::shared_ptr<BackgroundValidator>(new BackgroundValidator(std::launch::deferred));
}

Status BackgroundValidator::started() {
  if (state_->embedded.wait_for(std::chrono::seconds(0)) == std::future_status::deferred)
    return Status::Ok();  // never used
  const auto& embedded = state_->embedded.get();
  return embedded.ok() ? Status::Ok() : embedded.status();
}

ValidationReport BackgroundValidator::Validate(std::string_view code,
                                               const ValidationPolicy& policy) {
  const auto& embedded = state_->embedded.get();
  if (!embedded.ok()) {
    ValidationReport report;
    report.ok = false;
    report.violations.push_back({0, 0, "internal-error",
                                 "the validator is not available: " + embedded.status().message(),
                                 "check the codeact installation"});
    return report;
  }
  return (*embedded)->Validate(code, policy);
}

StatusOr<std::vector<std::string>> BackgroundValidator::AllowedImports(
    const ValidationPolicy& policy) {
  const auto& embedded = state_->embedded.get();
  if (!embedded.ok()) return embedded.status();
  return (*embedded)->AllowedImports(policy);
}

PythonVersion BackgroundValidator::EmbeddedVersion() const {
  const auto [major, minor] = EmbeddedPythonVersion();
  return {major, minor};
}

std::string BackgroundValidator::InstallationInterpreter() const {
  if (std::string path = EmbeddedInstallationInterpreter(); !path.empty()) return path;
  const auto& embedded = state_->embedded.get();
  return embedded.ok() ? (*embedded)->InstallationInterpreter() : "";
}

}  // namespace codeact::internal
