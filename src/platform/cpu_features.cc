#include "platform/cpu_features.h"

#include <hwy/targets.h>

#include <thread>

namespace strata {

std::string simd_targets_description() {
  std::string out;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    if (!out.empty()) out += ' ';
    out += hwy::TargetName(target);
  }
  return out;
}

unsigned hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

}  // namespace strata
