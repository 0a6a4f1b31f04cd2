// Capping Highway's dispatch: every target this CPU offers can be made the best one, and the
// cap lifts again.
#include "platform/cpu_features.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <string>
#include <vector>

namespace strata {
namespace {

TEST(CpuFeaturesTest, DispatchCanBeCappedAtEveryOfferedTarget) {
  const std::string all = simd_targets_description();
  std::vector<std::string> names;
  for (int64_t target : hwy::SupportedAndGeneratedTargets())
    names.push_back(hwy::TargetName(target));
  ASSERT_FALSE(names.empty());
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_TRUE(disable_simd_targets_above(names[i])) << names[i];
    // The capped target now leads, and the ones after it are still there.
    std::string want;
    for (size_t j = i; j < names.size(); ++j) want += (j > i ? " " : "") + names[j];
    EXPECT_EQ(simd_targets_description(), want);
    lift_simd_target_cap();
  }
  EXPECT_FALSE(disable_simd_targets_above("AVX9"));
  EXPECT_FALSE(disable_simd_targets_above(""));
  EXPECT_EQ(simd_targets_description(), all);
}

}  // namespace
}  // namespace strata
