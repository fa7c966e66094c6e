#include "common/status_macros.hpp"

#include <gtest/gtest.h>

#include <string>

namespace codeact {
namespace {

Status Step(bool ok, int* ran) {
  ++*ran;
  return ok ? Status::Ok() : NotFound("step failed");
}

Status TwoSteps(bool first_ok, int* ran) {
  CODEACT_RETURN_IF_ERROR(Step(first_ok, ran));
  CODEACT_RETURN_IF_ERROR(Step(true, ran));
  return InvalidArgument("both steps ran");
}

StatusOr<std::string> Name(bool ok) {
  if (!ok) return PermissionDenied("no name");
  return std::string("codeact");
}

StatusOr<std::size_t> TwiceTheLength(const std::string& text) { return text.size() * 2; }

StatusOr<std::size_t> NameLength(bool ok) {
  CODEACT_ASSIGN_OR_RETURN(const std::string name, Name(ok));
  std::size_t twice = 0;
  CODEACT_ASSIGN_OR_RETURN(twice, TwiceTheLength(name));
  return twice;
}

TEST(StatusMacrosTest, ReturnIfErrorStopsAtTheFirstError) {
  int ran = 0;
  Status s = TwoSteps(false, &ran);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "step failed");
  EXPECT_EQ(ran, 1);
  ran = 0;
  EXPECT_EQ(TwoSteps(true, &ran).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ran, 2);
}

TEST(StatusMacrosTest, AssignOrReturnDeclaresAssignsOrPropagates) {
  StatusOr<std::size_t> ok = NameLength(true);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 14u);
  StatusOr<std::size_t> error = NameLength(false);
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(error.status().message(), "no name");
}

}  // namespace
}  // namespace codeact
