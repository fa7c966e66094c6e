#include "codeact/status.hpp"

#include "common/enum_names.hpp"

namespace codeact {

namespace {

constexpr auto kStatusCodeNames = internal::MakeEnumNames<StatusCode>(
    "UNKNOWN", {{StatusCode::kOk, "OK"},
                {StatusCode::kInvalidArgument, "INVALID_ARGUMENT"},
                {StatusCode::kNotFound, "NOT_FOUND"},
                {StatusCode::kFailedPrecondition, "FAILED_PRECONDITION"},
                {StatusCode::kPermissionDenied, "PERMISSION_DENIED"},
                {StatusCode::kResourceExhausted, "RESOURCE_EXHAUSTED"},
                {StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED"},
                {StatusCode::kUnavailable, "UNAVAILABLE"},
                {StatusCode::kInternal, "INTERNAL"}});

}  // namespace

std::string_view StatusCodeName(StatusCode code) { return kStatusCodeNames.Name(code); }

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

}  // namespace codeact
