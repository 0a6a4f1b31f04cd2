#include "quant/scale_search.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace strata::quant {

float signed_max_abs(int n, const float* x) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

float fit_symmetric(int n, int nmax, const float* x, const float* w, int8_t* L) {
  const float max = signed_max_abs(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, 0);
    return 0;
  }
  auto weight = [&](int i) { return w ? w[i] : x[i] * x[i]; };
  auto quant = [&](float iscale, int i) {
    return std::clamp(round_nearest(iscale * x[i]), -nmax, nmax - 1);
  };
  // The plain max-abs scale (k = 0) is the incumbent; another candidate must do strictly better.
  float best_scale = 0, best = 0;
  int best_k = 0;
  for (int step = 0; step < 19; ++step) {
    const int k = step == 0 ? 0 : (step <= 9 ? step - 10 : step - 9);
    const float iscale = -(static_cast<float>(nmax) + 0.1f * k) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = quant(iscale, i);
      const float wi = weight(i);
      sumlx += wi * x[i] * l;
      suml2 += wi * l * l;
    }
    if (step == 0) {
      best_scale = suml2 > 0 ? sumlx / suml2 : 0;
      best = best_scale * sumlx;
    } else if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      best_scale = sumlx / suml2;
      best = best_scale * sumlx;
      best_k = k;
    }
  }
  const float iscale = -(static_cast<float>(nmax) + 0.1f * best_k) / max;
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(quant(iscale, i) + nmax);
  return best_scale;
}

float fit_symmetric_refined(int n, int nmax, const float* x, int8_t* L) {
  const float max = signed_max_abs(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, 0);
    return 0;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(round_nearest(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx <= 0) continue;
      float sl2 = suml2 - w * L[i] * L[i];
      const int l = std::clamp(round_nearest(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (l == L[i]) continue;
      slx += w * x[i] * l;
      sl2 += w * l * l;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0 ? sumlx / suml2 : 0;
}

float fit_affine(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                 const AffineSearch& search) {
  float min = x[0], max = x[0], sum_w = w[0], sum_x = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  min = std::min(min, 0.0f);
  if (max <= min) {
    std::fill(L, L + n, 0);
    *neg_min = -min;
    return 0;
  }
  auto error_of = [&](float d) { return search.absolute_error ? std::fabs(d) : d * d; };
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::clamp(round_nearest(iscale * (x[i] - min)), 0, nmax));
    best_error += w[i] * error_of(scale * L[i] + min - x[i]);
  }
  uint8_t candidate[32];
  assert(n <= 32);
  for (int k = 0; k <= search.steps; ++k) {
    iscale = (search.rmin + search.rdelta * k + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(round_nearest(iscale * (x[i] - min)), 0, nmax);
      candidate[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i)
      error += w[i] * error_of(this_scale * candidate[i] + this_min - x[i]);
    if (error < best_error) {
      std::copy(candidate, candidate + n, L);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *neg_min = -min;
  return scale;
}

float fit_positive(int n, int nmax, const float* x, const float* w, uint8_t* L) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (max < kGroupMaxEps) {
    std::fill(L, L + n, 0);
    return 0;
  }
  float iscale = nmax / max;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const float d = x[i] - (1 / iscale) * round_nearest(iscale * x[i]);
    best_error += w[i] * d * d;
  }
  for (int k = -4; k <= 4; ++k) {
    if (k == 0) continue;
    const float iscale_k = (0.1f * k + nmax) / max;
    const float scale_k = 1 / iscale_k;
    float error = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, round_nearest(iscale_k * x[i]));
      const float d = x[i] - scale_k * l;
      error += w[i] * d * d;
    }
    if (error < best_error) {
      best_error = error;
      iscale = iscale_k;
    }
  }
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, round_nearest(iscale * x[i]));
    L[i] = static_cast<uint8_t>(l);
    sumlx += w[i] * x[i] * l;
    suml2 += w[i] * l * l;
  }
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      float slx = sumlx - w[i] * x[i] * L[i];
      float sl2 = suml2 - w[i] * L[i] * L[i];
      if (slx <= 0 || sl2 <= 0) continue;
      const int l = std::min(nmax, round_nearest(x[i] * sl2 / slx));
      if (l == L[i]) continue;
      slx += w[i] * x[i] * l;
      sl2 += w[i] * l * l;
      if (slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<uint8_t>(l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  return suml2 > 0 ? sumlx / suml2 : 0;
}

void importance_weights(const float* x, const float* importance, float sigma2, int n, float* w) {
  for (int i = 0; i < n; ++i) w[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

float sum_of_squares(const float* x, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}

}  // namespace strata::quant
