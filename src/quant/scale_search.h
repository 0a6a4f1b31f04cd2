// The scale searches behind the K-format and importance-weighted quantizers (quantize_k.h):
// weighted least squares over integer assignments, as ggml's k-quants fit them.
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::quant {

// Below this magnitude a group counts as all zeros (its scale would be denormal noise).
constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, for |x| < 2^22: adding 1.5 * 2^23 leaves the integer in the
// low mantissa bits. The same result as lrintf in the default rounding mode, without a libm call.
inline int round_nearest(float x) {
  const float shifted = x + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007FFFFF) - 0x00400000;
}

// Parameters of the affine search: candidate inverse scales (nmax + rmin + rdelta * k) / range
// for k = 0..steps.
struct AffineSearch {
  float rmin;
  float rdelta;
  int steps;
  bool absolute_error;  // minimize sum w |err| instead of sum w err^2 (Q2_K's unweighted search)
};

// The element of largest magnitude, with its sign (the first one on ties).
float signed_max_abs(int n, const float* x);

// Symmetric quants: x ~= scale * l with l in [-nmax, nmax - 1], stored as L = l + nmax. Tries
// the inverse scales -(nmax + k / 10) / max for k = -9..9 (max: the element of largest magnitude,
// with its sign); for each rounding, the best scale is sum(w x l) / sum(w l^2) and it removes
// (sum w x l)^2 / sum(w l^2) of the weighted energy, which is what is maximized. w defaults to x^2
// (large values matter most). Returns the scale.
float fit_symmetric(int n, int nmax, const float* x, const float* w, int8_t* L);

// Symmetric quants refined coordinate by coordinate: starting from max-abs rounding, each l is
// moved to the value that is optimal for it given the others' least-squares sums, and the move
// kept when it raises (sum w x l)^2 / sum(w l^2); up to 5 sweeps, w = x^2. Returns the scale;
// L = l + nmax.
float fit_symmetric_refined(int n, int nmax, const float* x, int8_t* L);

// Affine quants: x ~= scale * L + min with L in [0, nmax] and min <= 0. For each candidate
// rounding, scale and min solve the 2x2 weighted least-squares system (min clamped to 0 when
// positive); the candidate with the least weighted error wins, starting from the plain
// (max - min) / nmax scaling. Returns the scale and writes -min (>= 0) to *neg_min.
float fit_affine(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                 const AffineSearch& search);

// Non-negative values (sub-block scales or mins) as x ~= scale * L, L in [0, nmax], minimizing
// sum w (x - scale L)^2: the best of 9 inverse scales around nmax / max, then up to 5 sweeps of
// coordinate moves as in fit_symmetric_refined. Returns the scale.
float fit_positive(int n, int nmax, const float* x, const float* w, uint8_t* L);

// Per-element weights of the importance-weighted searches: importance times the typical size of
// a value near x, sqrt(sigma2 + x^2), so that small values are not ignored.
void importance_weights(const float* x, const float* importance, float sigma2, int n, float* w);

float sum_of_squares(const float* x, int n);

}  // namespace strata::quant
