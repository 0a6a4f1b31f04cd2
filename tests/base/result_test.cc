#include "base/result.h"

#include <gtest/gtest.h>

#include <memory>

namespace strata {
namespace {

Result<int> parse_positive(int x) {
  if (x <= 0) return make_error(ErrorCode::kInvalidArgument, "must be positive");
  return x;
}

Result<int> doubled(int x) {
  STRATA_ASSIGN_OR_RETURN(int v, parse_positive(x));
  return 2 * v;
}

TEST(ResultTest, CarriesValueOrError) {
  Result<int> good = parse_positive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  Result<int> bad = parse_positive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "must be positive");
}

TEST(ResultTest, AssignOrReturnPropagates) {
  EXPECT_EQ(*doubled(4), 8);
  EXPECT_FALSE(doubled(0).ok());
}

TEST(ResultTest, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

}  // namespace
}  // namespace strata
