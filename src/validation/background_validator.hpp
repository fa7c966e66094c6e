// A Validator whose embedded interpreter starts on a thread of its own as soon as it is made, so
// that its caller goes on meanwhile (a one-shot `codeact run` starts the child interpreter in
// parallel), or on first use. Each call waits for the start, then goes to Validator::Embedded(). A
// start that failed makes every validation a violation naming why (rule "internal-error"), and
// started() says so.
#pragma once

#include <future>
#include <memory>

#include "codeact/validator.hpp"

namespace codeact::internal {

class BackgroundValidator final : public Validator {
 public:
  static std::shared_ptr<BackgroundValidator> Start();
  // One that starts the embedded interpreter only when a call needs it, on the caller's thread
  // (a run whose child validates the code needs none, unless tools' names are to be checked).
  static std::shared_ptr<BackgroundValidator> OnFirstUse();
  ~BackgroundValidator() override;

  // Waits for the start: OK, or why the embedded validator is not available. OK too when it
  // was to start on first use and nothing used it.
  Status started();

  ValidationReport Validate(std::string_view code, const ValidationPolicy& policy) override;
  StatusOr<std::vector<std::string>> AllowedImports(const ValidationPolicy& policy) override;
  PythonVersion EmbeddedVersion() const override;  // the build's libpython: no waiting
  std::string InstallationInterpreter() const override;

 private:
  explicit BackgroundValidator(std::launch when);
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace codeact::internal
