// GeGLU, the gated feed-forward activation of the Gemma family (and BERT's plain GELU), rounded as
// the reference engine rounds it: GELU (tanh approximation) of the gate's f16 value, read from a
// table of all 65536 f16 inputs and itself rounded to f16, times the up projection in f32.
#pragma once

#include <cstddef>

namespace strata::kernels {

// gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2)))
float gelu_tanh(float x);

// gate[i] = gelu(gate[i]) * up[i] (in place in gate); gelu is 0 at or below -10 and the identity
// at or above 10, else gelu_tanh of the f16-rounded gate, rounded to f16.
void geglu(float* gate, const float* up, size_t n);

// x[i] = gelu(x[i]), rounded as geglu rounds it (BERT's feed-forward activation).
void gelu(float* x, size_t n);

}  // namespace strata::kernels
