#include "platform/cpu_features.h"

#include <hwy/targets.h>
#include <unistd.h>

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

bool disable_simd_targets_above(std::string_view best) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    if (best != hwy::TargetName(target)) continue;
    // Highway gives better targets lower bits: everything below `target` is better. In Highway
    // 1.0, every SupportedTargets() call re-detects the CPU and re-chooses the dispatch target
    // from all it finds, before applying DisableTargets' mask to what it returns: a cap set by
    // DisableTargets alone lasts only until the next caller asks what is supported (the
    // CPU-feature report does). Pinning the detected set (the hook Highway's own per-target
    // tests use) skips the re-detection, so the choice made here stays.
    hwy::SetSupportedTargetsForTest(hwy::SupportedTargets() & ~(target - 1));
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    return true;
  }
  return false;
}

void lift_simd_target_cap() {
  hwy::SetSupportedTargetsForTest(0);
  hwy::DisableTargets(0);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size)
                                    : 0;
}

unsigned hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

}  // namespace strata
