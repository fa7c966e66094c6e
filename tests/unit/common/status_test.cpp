#include "codeact/status.hpp"

#include <gtest/gtest.h>

namespace codeact {
namespace {

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = InvalidArgument("bad flag");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: bad flag");
}

TEST(StatusOrTest, HoldsValueOrError) {
  StatusOr<int> v = 3;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
  StatusOr<int> e = NotFound("x");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
  StatusOr<int> misuse = Status::Ok();  // an OK status carries no value: becomes an error
  EXPECT_FALSE(misuse.ok());
  EXPECT_EQ(misuse.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace codeact
