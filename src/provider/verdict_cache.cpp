#include "provider/verdict_cache.hpp"

#include <mutex>
#include <string>
#include <unordered_map>

#include "json/policy_json.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {
namespace {

class VerdictCache final : public Validator {
 public:
  explicit VerdictCache(std::shared_ptr<Validator> inner) : inner_(std::move(inner)) {}

  ValidationReport Validate(std::string_view code, const ValidationPolicy& policy) override {
    std::string key = Key(code, policy);
    {
      std::lock_guard lock(mu_);
      if (auto it = reports_.find(key); it != reports_.end()) return it->second;
    }
    ValidationReport report = inner_->Validate(code, policy);
    if (report.ok && key.size() <= kMaxVerdictCacheBytes) {
      std::lock_guard lock(mu_);
      if (bytes_ + key.size() > kMaxVerdictCacheBytes) {
        reports_.clear();
        bytes_ = 0;
      }
      const std::size_t size = key.size();
      if (reports_.emplace(std::move(key), report).second) bytes_ += size;
    }
    return report;
  }

  StatusOr<std::vector<std::string>> AllowedImports(const ValidationPolicy& policy) override {
    return inner_->AllowedImports(policy);
  }
  StatusOr<std::vector<std::string>> BlockedBuiltins(const ValidationPolicy& policy) override {
    return inner_->BlockedBuiltins(policy);
  }
  PythonVersion EmbeddedVersion() const override { return inner_->EmbeddedVersion(); }
  std::string InstallationInterpreter() const override { return inner_->InstallationInterpreter(); }

 private:
  // Every field of the policy (the validator package's own form of it), then the code.
  static std::string Key(std::string_view code, const ValidationPolicy& policy) {
    std::string key = SerializeJson(PolicyForValidator(policy));
    key.push_back('\n');
    key.append(code);
    return key;
  }

  const std::shared_ptr<Validator> inner_;
  std::mutex mu_;
  std::unordered_map<std::string, ValidationReport> reports_;
  std::size_t bytes_ = 0;
};

}  // namespace

std::shared_ptr<Validator> WithVerdictCache(std::shared_ptr<Validator> validator) {
  return std::make_shared<VerdictCache>(std::move(validator));
}

}  // namespace codeact::internal
