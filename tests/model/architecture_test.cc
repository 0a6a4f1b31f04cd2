// The architecture table and the per-layer spec: specs filled from the metadata for each
// architecture, fused projections (attn_qkv, ffn_gate_up) computing what the split ones do,
// expert stacks loaded as views and refused for compute, hidden-state output, and the
// soft-caps. Models are small random-weight F32 files written with the project's GGUF writer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "gguf/writer.h"
#include "kernels/matmul.h"
#include "model/architectures.h"
#include "model/model.h"

namespace strata::model {
namespace {

constexpr size_t kVocab = 96, kEmbd = 64, kLayers = 2, kFF = 96, kHeads = 4, kKvHeads = 2;
constexpr size_t kHeadDim = kEmbd / kHeads, kQDim = kHeads * kHeadDim, kKvDim = kKvHeads * kHeadDim;

struct FileOptions {
  std::string arch = "llama";
  bool fused_qkv = false;
  bool fused_gate_up = false;
  size_t n_experts = 0;      // expert stacks instead of a dense feed-forward network
  DType type = DType::kF32;  // of the block matrices: F32 or Q8_0
  std::function<void(gguf::Writer&)> edit = nullptr;  // more metadata
};

// Random f32 values for a tensor, the same for the same name whatever file they go into.
std::vector<float> values(const std::string& name, size_t n, float scale) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(name)));
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void add(gguf::Writer& w, const std::string& name, std::vector<uint64_t> dims,
         const std::vector<float>& v) {
  ASSERT_TRUE(w.add_tensor(name, DType::kF32, std::move(dims), bytes_of(v)).ok()) << name;
}

// Q8_0 blocks of v (a plain round-to-nearest quantizer; any will do).
std::vector<uint8_t> q8_0_of(const std::vector<float>& v) {
  std::vector<uint8_t> out;
  for (size_t b = 0; b < v.size(); b += 32) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[b + i]));
    const float d = amax / 127;
    const uint16_t h = fp32_to_fp16(d);
    out.push_back(static_cast<uint8_t>(h & 0xff));
    out.push_back(static_cast<uint8_t>(h >> 8));
    for (size_t i = 0; i < 32; ++i) {
      out.push_back(
          static_cast<uint8_t>(static_cast<int8_t>(d > 0 ? std::lround(v[b + i] / d) : 0)));
    }
  }
  return out;
}

// A block's weight matrix in the file's type.
void add_matrix(gguf::Writer& w, const FileOptions& o, const std::string& name,
                std::vector<uint64_t> dims, const std::vector<float>& v) {
  if (o.type == DType::kF32) return add(w, name, std::move(dims), v);
  ASSERT_TRUE(w.add_tensor(name, DType::kQ8_0, std::move(dims), q8_0_of(v)).ok()) << name;
}

// Concatenated rows of the named matrices (each [rows][cols], GGUF dims {cols, rows}).
std::vector<float> concat(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> out;
  for (const std::vector<float>& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

void add_attention(gguf::Writer& w, const std::string& p, const FileOptions& o) {
  const float s = 1.0f / std::sqrt(static_cast<float>(kEmbd));
  const std::vector<float> q = values(p + "attn_q.weight", kQDim * kEmbd, s);
  const std::vector<float> k = values(p + "attn_k.weight", kKvDim * kEmbd, s);
  const std::vector<float> v = values(p + "attn_v.weight", kKvDim * kEmbd, s);
  const bool bias = o.arch == "qwen2";
  const std::vector<float> bq = values(p + "attn_q.bias", kQDim, 0.5f);
  const std::vector<float> bk = values(p + "attn_k.bias", kKvDim, 0.5f);
  const std::vector<float> bv = values(p + "attn_v.bias", kKvDim, 0.5f);
  if (o.fused_qkv) {
    add_matrix(w, o, p + "attn_qkv.weight", {kEmbd, kQDim + 2 * kKvDim}, concat({q, k, v}));
    if (bias) add(w, p + "attn_qkv.bias", {kQDim + 2 * kKvDim}, concat({bq, bk, bv}));
  } else {
    add_matrix(w, o, p + "attn_q.weight", {kEmbd, kQDim}, q);
    add_matrix(w, o, p + "attn_k.weight", {kEmbd, kKvDim}, k);
    add_matrix(w, o, p + "attn_v.weight", {kEmbd, kKvDim}, v);
    if (bias) {
      add(w, p + "attn_q.bias", {kQDim}, bq);
      add(w, p + "attn_k.bias", {kKvDim}, bk);
      add(w, p + "attn_v.bias", {kKvDim}, bv);
    }
  }
  if (o.arch == "qwen3") {
    add(w, p + "attn_q_norm.weight", {kHeadDim}, values(p + "attn_q_norm", kHeadDim, 2.0f));
    add(w, p + "attn_k_norm.weight", {kHeadDim}, values(p + "attn_k_norm", kHeadDim, 2.0f));
  }
  add_matrix(w, o, p + "attn_output.weight", {kQDim, kEmbd},
             values(p + "attn_output", kEmbd * kQDim, s));
}

void add_feed_forward(gguf::Writer& w, const std::string& p, const FileOptions& o) {
  const float s = 1.0f / std::sqrt(static_cast<float>(kEmbd));
  if (o.n_experts > 0) {
    const size_t n = o.n_experts;
    add(w, p + "ffn_gate_inp.weight", {kEmbd, n}, values(p + "router", n * kEmbd, s));
    add(w, p + "ffn_gate_exps.weight", {kEmbd, kFF, n}, values(p + "gexp", n * kFF * kEmbd, s));
    add(w, p + "ffn_up_exps.weight", {kEmbd, kFF, n}, values(p + "uexp", n * kFF * kEmbd, s));
    add(w, p + "ffn_down_exps.weight", {kFF, kEmbd, n}, values(p + "dexp", n * kFF * kEmbd, s));
    return;
  }
  const std::vector<float> gate = values(p + "ffn_gate.weight", kFF * kEmbd, s);
  const std::vector<float> up = values(p + "ffn_up.weight", kFF * kEmbd, s);
  if (o.fused_gate_up) {
    add_matrix(w, o, p + "ffn_gate_up.weight", {kEmbd, 2 * kFF}, concat({gate, up}));
  } else {
    add_matrix(w, o, p + "ffn_gate.weight", {kEmbd, kFF}, gate);
    add_matrix(w, o, p + "ffn_up.weight", {kEmbd, kFF}, up);
  }
  add_matrix(w, o, p + "ffn_down.weight", {kFF, kEmbd}, values(p + "ffn_down", kEmbd * kFF, s));
}

// A random-weight model of the architecture's shape; returns its path.
std::string write_model(const std::string& name, const FileOptions& o) {
  gguf::Writer w;
  const std::string a = o.arch + ".";
  w.set("general.architecture", gguf::Value::string(o.arch));
  w.set(a + "vocab_size", gguf::Value::uint32(kVocab));
  w.set(a + "context_length", gguf::Value::uint32(256));
  w.set(a + "embedding_length", gguf::Value::uint32(kEmbd));
  w.set(a + "block_count", gguf::Value::uint32(kLayers));
  w.set(a + "feed_forward_length", gguf::Value::uint32(kFF));
  w.set(a + "attention.head_count", gguf::Value::uint32(kHeads));
  w.set(a + "attention.head_count_kv", gguf::Value::uint32(kKvHeads));
  w.set(a + "attention.layer_norm_rms_epsilon", gguf::Value::float32(1e-6f));
  if (o.n_experts > 0) {
    w.set(a + "expert_count", gguf::Value::uint32(static_cast<uint32_t>(o.n_experts)));
    w.set(a + "expert_used_count", gguf::Value::uint32(2));
  }
  if (o.edit) o.edit(w);
  add(w, "token_embd.weight", {kEmbd, kVocab}, values("token_embd", kVocab * kEmbd, 1.0f));
  add(w, "output_norm.weight", {kEmbd}, values("output_norm", kEmbd, 2.0f));
  add(w, "output.weight", {kEmbd, kVocab}, values("output", kVocab * kEmbd, 0.2f));
  for (size_t l = 0; l < kLayers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(w, p + "attn_norm.weight", {kEmbd}, values(p + "attn_norm", kEmbd, 2.0f));
    add_attention(w, p, o);
    add(w, p + "ffn_norm.weight", {kEmbd}, values(p + "ffn_norm", kEmbd, 2.0f));
    add_feed_forward(w, p, o);
  }
  const std::string path = ::testing::TempDir() + "/arch-" + name + "-" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                           ".gguf";
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

std::unique_ptr<gguf::File> open(const std::string& path) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(path, MappedFile::Mode::kResident);
  EXPECT_TRUE(f.ok()) << f.error().message;
  return f.ok() ? std::move(f).value() : nullptr;
}

Result<std::unique_ptr<Model>> load(const std::string& path, ThreadPool* interleave = nullptr) {
  return Model::load(open(path), ModelLoadOptions{interleave});
}

// One forward pass over a prompt of kPrompt tokens in one batch, every position wanting output.
constexpr size_t kPrompt = 7;
std::vector<float> run(Model& m, OutputKind kind = OutputKind::kLogits) {
  ThreadPool pool(2);
  kv::KvCache cache(m.kv_shape(16), 4, kv::KvPrecision::kF32);
  EXPECT_TRUE(cache.reserve(0, kPrompt).ok());
  Batch batch;
  for (size_t i = 0; i < kPrompt; ++i) {
    batch.push_back(
        {0, static_cast<uint32_t>(i), static_cast<int32_t>((i * 37 + 5) % kVocab), true});
  }
  std::vector<float> out(kPrompt * m.output_width(kind));
  EXPECT_TRUE(m.forward(batch, cache, pool, out.data(), kind).ok());
  return out;
}

TEST(ArchitectureTableTest, EveryEntryIsFoundByName) {
  for (const ArchitectureInfo& a : architectures()) {
    EXPECT_EQ(find_architecture(a.name), &a);
    EXPECT_STREQ(architecture_name(a.arch), a.name);
  }
  EXPECT_EQ(find_architecture("mamba"), nullptr);
  EXPECT_EQ(supported_architecture_names(),
            "llama, qwen2, qwen3, gemma, gemma2, gemma3, smollm3, granite, olmo2, mistral3, phi3, "
            "bert, nomic-bert");
}

struct ArchCase {
  const char* arch;
  RopeStyle rope;
  bool qkv_bias;
  bool qk_norm;
};

TEST(LayerSpecTest, FilledFromTheMetadataForEachArchitecture) {
  for (const ArchCase& ac : {ArchCase{"llama", RopeStyle::kNormal, false, false},
                             ArchCase{"qwen2", RopeStyle::kNeox, true, false},
                             ArchCase{"qwen3", RopeStyle::kNeox, false, true}}) {
    SCOPED_TRACE(ac.arch);
    std::unique_ptr<gguf::File> f = open(write_model(ac.arch, {.arch = ac.arch}));
    ASSERT_TRUE(f);
    Result<ModelConfig> c = read_config(*f);
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->arch_name, ac.arch);
    ASSERT_EQ(c->layers.size(), kLayers);
    for (const LayerSpec& s : c->layers) {
      EXPECT_EQ(s.norm, NormKind::kRms);
      EXPECT_EQ(s.norm_placement, NormPlacement::kPre);
      EXPECT_FLOAT_EQ(s.norm_eps, 1e-6f);
      EXPECT_EQ(s.attn_scale, 1.0f / std::sqrt(static_cast<float>(kHeadDim)));
      EXPECT_EQ(s.rope_style, ac.rope);
      EXPECT_EQ(s.rope_dims, kHeadDim);
      EXPECT_EQ(s.rope_freq_base, 10000.0f);
      EXPECT_EQ(s.sliding_window, 0u);
      EXPECT_EQ(s.activation, Activation::kSwiGlu);
      EXPECT_EQ(s.qkv_bias, ac.qkv_bias);
      EXPECT_EQ(s.qk_norm, ac.qk_norm);
      EXPECT_EQ(s.attn_logit_softcap, 0.0f);
    }
    EXPECT_EQ(c->final_logit_softcap, 0.0f);
    Result<std::unique_ptr<Model>> m = Model::load(std::move(f));
    ASSERT_TRUE(m.ok()) << m.error().message;
    for (float x : run(**m)) ASSERT_TRUE(std::isfinite(x));
  }
}

TEST(LayerSpecTest, AttentionScaleComesFromTheMetadata) {
  const std::string path =
      write_model("scale", {.edit = [](gguf::Writer& w) {
                    w.set("llama.attention.scale", gguf::Value::float32(0.125f));
                  }});
  Result<ModelConfig> c = read_config(*open(path));
  ASSERT_TRUE(c.ok()) << c.error().message;
  for (const LayerSpec& s : c->layers) EXPECT_EQ(s.attn_scale, 0.125f);
  // A different scale is a different model.
  Result<std::unique_ptr<Model>> scaled = load(path);
  Result<std::unique_ptr<Model>> plain = load(write_model("plain", {}));
  ASSERT_TRUE(scaled.ok() && plain.ok());
  EXPECT_NE(run(**scaled), run(**plain));
}

// The same weights in one matrix (attn_qkv, ffn_gate_up) give the same logits, bit for bit, as
// the split matrices: F32, and Q8_0 with every view interleaved where the CPU has the kernel.
TEST(FusedProjectionTest, FusedQkvAndGateUpGiveTheSplitLogits) {
  ThreadPool pool(2);
  for (DType type : {DType::kF32, DType::kQ8_0}) {
    for (const char* arch : {"llama", "qwen2", "qwen3"}) {
      SCOPED_TRACE(std::string(arch) + " " + std::string(dtype_name(type)));
      const FileOptions split_file{.arch = arch, .type = type};
      const FileOptions fused_file{
          .arch = arch, .fused_qkv = true, .fused_gate_up = true, .type = type};
      Result<std::unique_ptr<Model>> split = load(write_model("split", split_file), &pool);
      Result<std::unique_ptr<Model>> fused = load(write_model("fused", fused_file), &pool);
      ASSERT_TRUE(split.ok()) << split.error().message;
      ASSERT_TRUE(fused.ok()) << fused.error().message;
      const LayerWeights& l = (*fused)->weights().layers[0];
      EXPECT_EQ(static_cast<const uint8_t*>(l.wk.data),
                static_cast<const uint8_t*>(l.wq.data) + kQDim * row_bytes(type, kEmbd));
      EXPECT_EQ(static_cast<const uint8_t*>(l.w_up.data),
                static_cast<const uint8_t*>(l.w_gate.data) + kFF * row_bytes(type, kEmbd));
      EXPECT_EQ(l.wk.layout, kernels::preferred_layout(type, kKvDim, kEmbd));
      EXPECT_EQ(run(**split), run(**fused));
    }
  }
}

TEST(HiddenStateTest, HiddenStateTimesTheOutputMatrixIsTheLogits) {
  Result<std::unique_ptr<Model>> m = load(write_model("hidden", {}));
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<float> logits = run(**m);
  const std::vector<float> hidden = run(**m, OutputKind::kHidden);
  ASSERT_EQ(hidden.size(), kPrompt * kEmbd);
  const Matrix& out = (*m)->weights().output;
  std::vector<float> product(kPrompt * kVocab);
  ThreadPool pool(2);
  kernels::matmul(out.type, out.layout, out.data, out.rows, out.cols, hidden.data(), kPrompt,
                  product.data(), pool);
  EXPECT_EQ(product, logits);
}

TEST(SoftCapTest, FinalLogitSoftCapIsApplied) {
  Result<std::unique_ptr<Model>> plain = load(write_model("plain", {}));
  Result<std::unique_ptr<Model>> capped =
      load(write_model("capped", {.edit = [](gguf::Writer& w) {
                         w.set("llama.final_logit_softcapping", gguf::Value::float32(2.0f));
                       }}));
  ASSERT_TRUE(plain.ok() && capped.ok());
  EXPECT_EQ((*capped)->config().final_logit_softcap, 2.0f);
  const std::vector<float> a = run(**plain), b = run(**capped);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(b[i], 2.0f * std::tanh(a[i] / 2.0f));
}

// An attention soft-cap bends the scores: a small cap changes the logits, one far above every
// score leaves them as they were (to rounding: another attention path runs).
TEST(SoftCapTest, AttentionLogitSoftCapBendsTheScores) {
  auto capped = [](float cap) {
    Result<std::unique_ptr<Model>> m =
        load(write_model("attn-cap", {.edit = [cap](gguf::Writer& w) {
                           w.set("llama.attn_logit_softcapping", gguf::Value::float32(cap));
                         }}));
    EXPECT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ((*m)->config().layers[0].attn_logit_softcap, cap);
    return run(**m);
  };
  Result<std::unique_ptr<Model>> plain_model = load(write_model("plain", {}));
  ASSERT_TRUE(plain_model.ok());
  const std::vector<float> plain = run(**plain_model);
  const std::vector<float> wide = capped(1e6f), tight = capped(0.05f);
  double wide_err = 0, tight_err = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    wide_err = std::max(wide_err, double{std::fabs(wide[i] - plain[i])});
    tight_err = std::max(tight_err, double{std::fabs(tight[i] - plain[i])});
  }
  EXPECT_LT(wide_err, 1e-4);
  EXPECT_GT(tight_err, 1e-2);
}

TEST(ExpertTest, StacksLoadAsViewsAndTheModelIsRefused) {
  const size_t n = 4;
  const std::string path = write_model("moe", {.n_experts = n});
  std::unique_ptr<gguf::File> f = open(path);
  Result<ModelConfig> c = read_config(*f);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->n_experts, n);
  EXPECT_EQ(c->n_experts_used, 2u);
  EXPECT_EQ(c->n_ff_expert, kFF);
  Result<ModelWeights> w = load_weights(*f, *c);
  ASSERT_TRUE(w.ok()) << w.error().message;
  const LayerWeights& l = w->layers[1];
  EXPECT_EQ(l.w_router.rows, n);
  EXPECT_EQ(l.gate_exps.n_experts, n);
  EXPECT_EQ(l.down_exps.first.rows, kEmbd);
  EXPECT_EQ(l.down_exps.first.cols, kFF);
  const gguf::TensorInfo* up = f->find_tensor("blk.1.ffn_up_exps.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(l.up_exps.expert(3).data, up->data + 3 * kFF * kEmbd * sizeof(float));

  Result<std::unique_ptr<Model>> m = load(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(m.error().message.find("mixture-of-experts"), std::string::npos) << m.error().message;
}

TEST(LayerSpecTest, UnknownArchitectureListsTheTable) {
  Result<std::unique_ptr<Model>> m =
      load(write_model("mamba", {.edit = [](gguf::Writer& w) {
                         w.set("general.architecture", gguf::Value::string("mamba"));
                       }}));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(m.error().message.find(
                "'mamba' (supported: llama, qwen2, qwen3, gemma, gemma2, gemma3, smollm3, granite, "
                "olmo2, mistral3, phi3, bert, nomic-bert)"),
            std::string::npos)
      << m.error().message;
}

// rope.scaling.type yarn: the factor is required; the reference engine's defaults fill the rest,
// and the attention factor cancels the 1 + 0.1 ln(factor) the rotation applies itself.
TEST(LayerSpecTest, YarnReadsItsParametersWithTheReferenceDefaults) {
  auto config = [](std::function<void(gguf::Writer&)> more) {
    return read_config(*open(write_model("yarn", {.edit = [&](gguf::Writer& w) {
                                           w.set("llama.rope.scaling.type",
                                                 gguf::Value::string("yarn"));
                                           more(w);
                                         }})));
  };
  Result<ModelConfig> missing = config([](gguf::Writer&) {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("rope.scaling.factor is missing"), std::string::npos);
  Result<ModelConfig> c = config([](gguf::Writer& w) {
    w.set("llama.rope.scaling.factor", gguf::Value::float32(4.0f));
    w.set("llama.rope.scaling.original_context_length", gguf::Value::uint32(64));
  });
  ASSERT_TRUE(c.ok()) << c.error().message;
  const LayerSpec& s = c->layers[0];
  EXPECT_EQ(s.rope_freq_scale, 0.25f);
  EXPECT_EQ(s.yarn.ext_factor, 1.0f);
  EXPECT_EQ(s.yarn.beta_fast, 32.0f);
  EXPECT_EQ(s.yarn.beta_slow, 1.0f);
  EXPECT_EQ(s.yarn.n_ctx_orig, 64u);
  EXPECT_FLOAT_EQ(s.yarn.attn_factor, 1.0f);
  // A different factor is a different model.
  Result<std::unique_ptr<Model>> plain = load(write_model("plain", {}));
  Result<std::unique_ptr<Model>> yarn = load(
      write_model("yarn-model", {.edit = [](gguf::Writer& w) {
                    w.set("llama.rope.scaling.type", gguf::Value::string("yarn"));
                    w.set("llama.rope.scaling.factor", gguf::Value::float32(4.0f));
                    w.set("llama.rope.scaling.original_context_length", gguf::Value::uint32(4));
                  }}));
  ASSERT_TRUE(plain.ok() && yarn.ok());
  EXPECT_NE(run(**plain), run(**yarn));
}

// A file that names an architecture but lacks one of its tensors is refused at load, naming the
// architecture and the tensor.
TEST(LayerSpecTest, AMissingTensorNamesTheArchitectureAndTheTensor) {
  Result<std::unique_ptr<Model>> m = load(write_model("gemma3-missing", {.arch = "gemma3"}));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("architecture 'gemma3'"), std::string::npos)
      << m.error().message;
  EXPECT_NE(m.error().message.find("blk.0.attn_q_norm.weight"), std::string::npos)
      << m.error().message;
}

// Gemma 2 and 3 put sliding windows on a pattern of layers, each with the local RoPE base; the
// file's attention.sliding_window_pattern (a period or a bool per layer) overrides the default.
TEST(LayerSpecTest, SlidingWindowLayersFollowThePattern) {
  auto specs = [](const std::string& arch, std::function<void(gguf::Writer&)> more) {
    const std::string path =
        write_model(arch, {.arch = arch, .edit = [&](gguf::Writer& w) {
                             const std::string k = arch + ".";
                             w.set(k + "block_count", gguf::Value::uint32(2));
                             w.set(k + "rope.freq_base", gguf::Value::float32(1e6f));
                             if (more) more(w);
                           }});
    Result<ModelConfig> c = read_config(*open(path));
    EXPECT_TRUE(c.ok()) << c.error().message;
    return c.ok() ? c->layers : std::vector<LayerSpec>{};
  };
  // Gemma 2: every other layer local (window 4096 unless said), on the global base.
  std::vector<LayerSpec> g2 = specs("gemma2", nullptr);
  ASSERT_EQ(g2.size(), 2u);
  EXPECT_EQ(g2[0].sliding_window, 4096u);
  EXPECT_EQ(g2[0].rope_freq_base, 1e6f);
  EXPECT_EQ(g2[1].sliding_window, 0u);
  EXPECT_EQ(g2[0].attn_logit_softcap, 50.0f);
  // Gemma 3 without attention.sliding_window: every layer global.
  for (const LayerSpec& s : specs("gemma3", nullptr)) EXPECT_EQ(s.sliding_window, 0u);
  // Gemma 3 with a window and a per-layer pattern: the local layer on base 10000, unscaled.
  std::vector<LayerSpec> g3 = specs("gemma3", [](gguf::Writer& w) {
    w.set("gemma3.attention.sliding_window", gguf::Value::uint32(512));
    w.set("gemma3.rope.scaling.type", gguf::Value::string("linear"));
    w.set("gemma3.rope.scaling.factor", gguf::Value::float32(8.0f));
    gguf::Array flags{gguf::ValueType::kBool,
                      {gguf::Value::boolean(false), gguf::Value::boolean(true)}};
    w.set("gemma3.attention.sliding_window_pattern", gguf::Value{gguf::ValueType::kArray, flags});
  });
  ASSERT_EQ(g3.size(), 2u);
  EXPECT_EQ(g3[0].sliding_window, 0u);
  EXPECT_EQ(g3[0].rope_freq_base, 1e6f);
  EXPECT_EQ(g3[0].rope_freq_scale, 0.125f);
  EXPECT_EQ(g3[1].sliding_window, 512u);
  EXPECT_EQ(g3[1].rope_freq_base, 10000.0f);
  EXPECT_EQ(g3[1].rope_freq_scale, 1.0f);
  EXPECT_EQ(g3[1].attn_logit_softcap, 0.0f);
  // A pattern of the wrong length is refused.
  const std::string bad = write_model(
      "bad-pattern", {.arch = "gemma2", .edit = [](gguf::Writer& w) {
                        gguf::Array flags{gguf::ValueType::kBool, {gguf::Value::boolean(true)}};
                        w.set("gemma2.attention.sliding_window_pattern",
                              gguf::Value{gguf::ValueType::kArray, flags});
                      }});
  Result<ModelConfig> c = read_config(*open(bad));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("sliding_window_pattern has 1 entries for 2 blocks"),
            std::string::npos)
      << c.error().message;
}

}  // namespace
}  // namespace strata::model
