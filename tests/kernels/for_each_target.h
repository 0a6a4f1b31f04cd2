// Runs a test body once per SIMD target that Highway compiled and this CPU supports, with the
// kernels' runtime dispatch forced to that target.
#pragma once

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <string>

#include "kernels/matmul.h"

namespace strata::kernels {

template <typename Fn>
void for_each_simd_target(const Fn& body) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    const std::string name = hwy::TargetName(target);
    SCOPED_TRACE("SIMD target " + name);
    ASSERT_EQ(std::string(active_simd_target()), name) << "dispatch did not switch target";
    body();
    if (::testing::Test::HasFatalFailure()) break;
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Whether the active target fuses multiply-adds in hardware (Highway's MulAdd is then one
// rounding), which the bit-exact comparisons with the scalar twins need.
inline bool active_target_has_fma() {
  const std::string name = active_simd_target();
  return name == "AVX2" || name == "AVX3" || name == "AVX3_DL" || name == "NEON";
}

}  // namespace strata::kernels
