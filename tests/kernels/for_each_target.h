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

}  // namespace strata::kernels
