// The truncation stages of llama.cpp's sampler chain (top-k, top-p, min-p), over a list of
// candidate tokens. Each stage keeps at least one candidate and, given the same input order,
// produces the same output order on every platform.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::sampling {

struct Candidate {
  int32_t id;
  float logit;
};

// The total order every stage sorts by: higher logit first, lower id first on ties. Sorting by
// a total order makes results independent of the standard library's sort algorithm.
inline bool ranks_before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Keeps the k best candidates, sorted by ranks_before. k <= 0 or k >= size: no change.
// One heap pass for small k, nth_element otherwise: O(n) either way plus O(k log k).
void keep_top_k(std::vector<Candidate>& candidates, int32_t k);

// Nucleus sampling (Holtzman et al. 2019): with p_i = softmax(logit)_i over the candidates,
// keeps the smallest best-first set whose mass reaches top_p (the token that crosses top_p is
// kept). Instead of sorting the vocabulary it sums the mass of 1024 logit buckets and sorts
// only the bucket where the running mass crosses top_p, so a flat 128K distribution costs
// O(n) too. The kept candidates come out in a deterministic order: wholly kept buckets in
// input order, then the boundary bucket best-first. top_p >= 1: no change.
void keep_top_p(std::vector<Candidate>& candidates, float top_p);

// Keeps candidates with p_i >= min_p * p_max, i.e. logit_i >= logit_max + ln(min_p), in their
// current order. min_p <= 0: no change.
void keep_min_p(std::vector<Candidate>& candidates, float min_p);

}  // namespace strata::sampling
