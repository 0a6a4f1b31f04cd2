// `--simd TARGET` caps Highway's dispatch for the whole process: the kernels must then run the
// capped target's code, and keep running it after anything else asks Highway what the CPU
// supports (Highway 1.0 re-chooses the target on every such question unless the cap is pinned).
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <string>

#include "kernels/matmul.h"
#include "platform/cpu_features.h"

namespace strata::kernels {
namespace {

TEST(DispatchCapTest, KernelsRunTheCappedTargetAndKeepRunningIt) {
  const std::string best = active_simd_target();
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    const std::string name = hwy::TargetName(target);
    ASSERT_TRUE(disable_simd_targets_above(name)) << name;
    EXPECT_EQ(active_simd_target(), name);
    (void)simd_targets_description();  // asks Highway for the supported targets again
    (void)hwy::SupportedTargets();
    EXPECT_EQ(active_simd_target(), name) << "the cap did not survive a SupportedTargets() call";
    lift_simd_target_cap();
  }
  EXPECT_EQ(active_simd_target(), best);
}

}  // namespace
}  // namespace strata::kernels
