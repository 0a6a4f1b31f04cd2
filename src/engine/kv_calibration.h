// Which layers a low-bit KV page keeps one format finer (kv::KvShape::precise_layers).
//
// A key error e moves a score by scale * q·e. Keys stored per channel in 4 or 3 bits err in
// proportion to how much each rotated channel varies over a page's positions, so the score noise
// a layer's low-bit keys cause is about
//
//   S = E[(scale |q|)^2] * E_c[var_page((R k)_c)]   (R the formats' rotation)
//
// and a softmax perturbed by noise of variance S moves by KL ~ S/2 at most. S differs by orders
// of magnitude between layers: heads that retrieve by content (induction and retrieval heads)
// have the largest queries and keys, and on the testbed target one layer of six caused 96% of r4's
// KL. measure_key_sensitivity runs the model once over a fixed calibration sequence and estimates
// S per layer; choose_precise_layers keeps the most sensitive eighth of the layers one format up.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "base/result.h"
#include "engine/kv_policy.h"
#include "model/model.h"
#include "platform/thread_pool.h"

namespace strata::engine {

struct LayerKeySensitivity {
  double query_energy = 0.0;  // E[(scale |q|)^2] over queries and heads
  double key_spread = 0.0;    // E over pages, heads, channels of var((R k)_c) within a page
  double score_noise() const { return query_energy * key_spread; }
};

// The calibration sequence: bos (when the vocabulary has one), then kCalibrationRun tokens drawn
// from a fixed generator, then the same tokens again (a repeat is what engages induction heads).
inline constexpr size_t kCalibrationRun = 96;
std::vector<int32_t> calibration_tokens(size_t n_vocab, std::optional<int32_t> bos);

// S per layer over `tokens`, computed with an f32 cache of page_size positions per page.
Result<std::vector<LayerKeySensitivity>> measure_key_sensitivity(model::Model& model,
                                                                 std::span<const int32_t> tokens,
                                                                 size_t page_size,
                                                                 ThreadPool& pool);

// The n layers of largest score noise; automatic n (nullopt): one eighth of the layers, rounded
// up, and none below 4 layers (a page whose layers are mostly precise is no longer low-bit).
std::vector<bool> choose_precise_layers(std::span<const LayerKeySensitivity> layers,
                                        std::optional<size_t> n = std::nullopt);

// The precise layers for a cache planned as `plan`: none unless an arena holds r4 or r3 pages,
// else choose_precise_layers(measure_key_sensitivity(...), n) on calibration_tokens.
Result<std::vector<bool>> calibrate_precise_layers(model::Model& model, int32_t bos,
                                                   const KvPlan& plan, std::optional<size_t> n,
                                                   size_t page_size, ThreadPool& pool);

}  // namespace strata::engine
