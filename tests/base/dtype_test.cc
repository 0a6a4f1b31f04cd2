#include "base/dtype.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(DTypeTest, BlockLayoutsMatchTheFormats) {
  // Bytes per block derived from each format's fields, not copied from the table.
  EXPECT_EQ(traits(DType::kQ4_0).type_size, 2u + 32 / 2);            // d, 4-bit quants
  EXPECT_EQ(traits(DType::kQ5_1).type_size, 2u + 2 + 4 + 32 / 2);    // d, m, qh, quants
  EXPECT_EQ(traits(DType::kQ8_0).type_size, 2u + 32);                // d, 8-bit quants
  EXPECT_EQ(traits(DType::kQ4_K).type_size, 2u + 2 + 12 + 256 / 2);  // d, dmin, scales, quants
  EXPECT_EQ(traits(DType::kQ6_K).type_size, 256u / 2 + 256 / 4 + 256 / 16 + 2);
  EXPECT_EQ(traits(DType::kQ2_K).type_size, 256u / 16 + 256 / 4 + 2 + 2);
  EXPECT_EQ(traits(DType::kQ3_K).type_size, 256u / 8 + 256 / 4 + 12 + 2);
  EXPECT_EQ(traits(DType::kQ5_K).type_size, 2u + 2 + 12 + 256 / 8 + 256 / 2);
  EXPECT_EQ(row_bytes(DType::kQ4_0, 64), 36u);
  EXPECT_EQ(row_bytes(DType::kF16, 10), 20u);
}

TEST(DTypeTest, UnknownIdsAreRejected) {
  EXPECT_FALSE(dtype_traits(4).has_value());  // removed Q4_2
  EXPECT_FALSE(dtype_traits(1000).has_value());
  EXPECT_EQ(dtype_from_name("q4_K"), DType::kQ4_K);
  EXPECT_FALSE(dtype_from_name("q9_9").has_value());
}

}  // namespace
}  // namespace strata
