#include "strata/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

TEST(JsonDepth, CountsNestedContainers) {
  EXPECT_EQ(json_nesting_depth("1"), 0u);
  EXPECT_EQ(json_nesting_depth("\"x\""), 0u);
  EXPECT_EQ(json_nesting_depth("{}"), 1u);
  EXPECT_EQ(json_nesting_depth(R"({"a":[1,{"b":[]}],"c":{}})"), 4u);
  EXPECT_EQ(json_nesting_depth("[[],[[]],[]]"), 3u);
}

TEST(JsonDepth, IgnoresBracketsInStrings) {
  EXPECT_EQ(json_nesting_depth(R"({"[[[[":"{{{{"})"), 1u);
  EXPECT_EQ(json_nesting_depth(R"(["\"[[[", "\\", [1]])"), 2u);
}

TEST(JsonDepth, MeasuresHostileInputInLinearTime) {
  const size_t n = 1'000'000;
  const std::string deep = std::string(n, '[') + std::string(n, ']');
  EXPECT_EQ(json_nesting_depth(deep), n);
  // Unbalanced and truncated text still yields the deepest point reached.
  EXPECT_EQ(json_nesting_depth("]]]][[["), 3u);
  EXPECT_EQ(json_nesting_depth("[\"unterminated [[["), 1u);
}

}  // namespace
}  // namespace strata
