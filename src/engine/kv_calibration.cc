#include "engine/kv_calibration.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

#include "base/log.h"
#include "kernels/kv_format.h"
#include "kv/attend.h"
#include "kv/kv_manager.h"

namespace strata::engine {
namespace {

// Sums (scale |q|)^2 over every query of every layer kv::attend computes.
class QueryEnergy final : public kv::AttentionProbe {
 public:
  explicit QueryEnergy(size_t n_layers) : sum_(n_layers, 0.0), count_(n_layers, 0) {}

  void observe(const kv::KvCache& cache, size_t layer, std::span<const kv::QueryPos> queries,
               size_t n_heads, float scale, const float* q) override {
    const size_t n = queries.size() * n_heads * cache.shape().head_dim;
    double energy = 0.0;
    for (size_t i = 0; i < n; ++i) energy += static_cast<double>(q[i]) * q[i];
    sum_[layer] += energy * scale * scale;
    count_[layer] += queries.size() * n_heads;
  }
  double mean(size_t layer) const {
    return count_[layer] == 0 ? 0.0 : sum_[layer] / static_cast<double>(count_[layer]);
  }

 private:
  std::vector<double> sum_;
  std::vector<size_t> count_;
};

// E over full pages, KV heads and channels of the variance of the rotated keys within a page.
double key_spread(kv::KvCache& cache, kv::SeqId seq, size_t layer) {
  const kv::KvShape& s = cache.shape();
  const std::span<const kv::PageId> pages = cache.page_table(seq);
  std::vector<float> keys(s.page_size * s.head_dim);
  double total = 0.0;
  size_t blocks = 0;
  for (kv::PageId id : pages) {
    if (cache.pool().page(id).n_filled < s.page_size) continue;
    for (size_t h = 0; h < s.n_kv_heads; ++h) {
      const kv::KvHeadView view = cache.pool().head(id, layer, h);
      kernels::kv_decode_block(view.precision, kernels::KvRole::kKeys, view.keys, s.page_size,
                               s.page_size, s.head_dim, keys.data());
      for (size_t t = 0; t < s.page_size; ++t) {
        kernels::rotate_kv_head(&keys[t * s.head_dim], s.head_dim);
      }
      for (size_t c = 0; c < s.head_dim; ++c) {
        double sum = 0.0, sum2 = 0.0;
        for (size_t t = 0; t < s.page_size; ++t) {
          const double x = keys[t * s.head_dim + c];
          sum += x, sum2 += x * x;
        }
        const double n = static_cast<double>(s.page_size);
        total += std::max(0.0, sum2 / n - (sum / n) * (sum / n));
      }
      ++blocks;
    }
  }
  return blocks == 0 ? 0.0 : total / static_cast<double>(blocks * s.head_dim);
}

}  // namespace

std::vector<int32_t> calibration_tokens(size_t n_vocab, std::optional<int32_t> bos) {
  std::vector<int32_t> run(kCalibrationRun);
  uint64_t state = 0x9E3779B97F4A7C15ull;  // splitmix64: the same tokens on every machine
  for (int32_t& t : run) {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    t = static_cast<int32_t>((z ^ (z >> 31)) % n_vocab);
  }
  std::vector<int32_t> tokens;
  if (bos) tokens.push_back(*bos);
  tokens.insert(tokens.end(), run.begin(), run.end());
  tokens.insert(tokens.end(), run.begin(), run.end());
  return tokens;
}

Result<std::vector<LayerKeySensitivity>> measure_key_sensitivity(model::Model& model,
                                                                 std::span<const int32_t> tokens,
                                                                 size_t page_size,
                                                                 ThreadPool& pool) {
  const kv::KvShape shape = model.kv_shape(page_size);
  const size_t pages = (tokens.size() + page_size - 1) / page_size;
  const std::vector<kv::ArenaSpec> arenas = {{kv::KvPrecision::kF32, pages}};
  kv::KvManager kv(shape, arenas);
  QueryEnergy energy(shape.n_layers);
  kv.cache().set_probe(&energy);
  constexpr kv::SeqId kSeq = 0;
  constexpr size_t kChunk = 32;  // positions per forward, as a prompt's chunks are
  std::vector<float> logits(model.output_width(model::OutputKind::kLogits));
  for (size_t start = 0; start < tokens.size(); start += kChunk) {
    const size_t n = std::min(kChunk, tokens.size() - start);
    if (!kv.allocate(kSeq, n)) {
      return make_error(ErrorCode::kInternal, "the calibration cache ran out of pages");
    }
    model::Batch batch;
    for (size_t i = 0; i < n; ++i) {
      batch.push_back({kSeq, static_cast<uint32_t>(start + i), tokens[start + i], i + 1 == n});
    }
    STRATA_RETURN_IF_ERROR(model.forward(batch, kv.cache(), pool, logits.data()));
  }
  kv.cache().set_probe(nullptr);
  std::vector<LayerKeySensitivity> out(shape.n_layers);
  for (size_t layer = 0; layer < shape.n_layers; ++layer) {
    out[layer] = {energy.mean(layer), key_spread(kv.cache(), kSeq, layer)};
  }
  return out;
}

std::vector<bool> choose_precise_layers(std::span<const LayerKeySensitivity> layers,
                                        std::optional<size_t> n) {
  const size_t n_layers = layers.size();
  const size_t count = std::min(n_layers, n.value_or(n_layers < 4 ? 0 : (n_layers + 7) / 8));
  std::vector<size_t> order(n_layers);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return layers[a].score_noise() > layers[b].score_noise();
  });
  std::vector<bool> precise(n_layers, false);
  for (size_t i = 0; i < count; ++i) precise[order[i]] = true;
  return precise;
}

Result<std::vector<bool>> calibrate_precise_layers(model::Model& model, int32_t bos,
                                                   const KvPlan& plan, std::optional<size_t> n,
                                                   size_t page_size, ThreadPool& pool) {
  const bool low_bit = std::any_of(plan.arenas.begin(), plan.arenas.end(), [](const auto& a) {
    return kernels::kv_format_packs_codes(a.precision);
  });
  if (!low_bit || n == size_t{0}) return std::vector<bool>{};
  const std::vector<int32_t> tokens = calibration_tokens(
      model.config().n_vocab, bos >= 0 ? std::optional<int32_t>(bos) : std::nullopt);
  STRATA_ASSIGN_OR_RETURN(const std::vector<LayerKeySensitivity> layers,
                          measure_key_sensitivity(model, tokens, page_size, pool));
  std::vector<bool> precise = choose_precise_layers(layers, n);
  std::string chosen;
  for (size_t l = 0; l < layers.size(); ++l) {
    char line[96];
    std::snprintf(line, sizeof line, "\n  layer %zu: score noise %.4g%s", l,
                  layers[l].score_noise(), precise[l] ? " (precise)" : "");
    chosen += line;
  }
  log_debug("KV calibration, per layer E[(scale |q|)^2] * key spread:" + chosen);
  if (std::none_of(precise.begin(), precise.end(), [](bool p) { return p; })) precise.clear();
  return precise;
}

}  // namespace strata::engine
