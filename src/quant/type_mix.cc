#include "quant/type_mix.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <utility>

#include "kernels/dequantize_scalar.h"

namespace strata::quant {
namespace {

// llama.cpp's LLAMA_FTYPE ids of the supported file types.
enum FileTypeId : uint32_t {
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 7,
  kQ5_0 = 8,
  kQ5_1 = 9,
  kQ2_K = 10,
  kQ3_K_S = 11,
  kQ3_K_M = 12,
  kQ3_K_L = 13,
  kQ4_K_S = 14,
  kQ4_K_M = 15,
  kQ5_K_S = 16,
  kQ5_K_M = 17,
  kQ6_K = 18,
};

enum class Category {
  kOutput,
  kTokenEmbedding,
  kAttentionV,  // attn_v, or the fused attn_qkv / attn_kv_b that contain it
  kAttentionK,
  kAttentionOutput,
  kFfnDown,
  kOther,
};

// The first matching rule wins, in the community's order.
Category category_of(std::string_view name) {
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") {
    return Category::kTokenEmbedding;
  }
  for (std::string_view v : {"attn_qkv.weight", "attn_kv_b.weight", "attn_v.weight"}) {
    if (name.find(v) != std::string_view::npos) return Category::kAttentionV;
  }
  if (name.find("attn_k.weight") != std::string_view::npos) return Category::kAttentionK;
  if (name.find("attn_q.weight") != std::string_view::npos) return Category::kOther;
  if (name.find("attn_output.weight") != std::string_view::npos) {
    return Category::kAttentionOutput;
  }
  if (name.find("ffn_up") != std::string_view::npos) return Category::kOther;
  if (name.find("ffn_gate") != std::string_view::npos) return Category::kOther;
  if (name.find("ffn_down") != std::string_view::npos) return Category::kFfnDown;
  return Category::kOther;
}

// The N of a "blk.N." tensor name.
std::optional<int> layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return std::nullopt;
  int layer = 0;
  const char* begin = name.data() + 4;
  const auto [end, ec] = std::from_chars(begin, name.data() + name.size(), layer);
  if (ec != std::errc() || end == begin || *end != '.') return std::nullopt;
  return layer;
}

// The layers that get more bits in the _M mixes: the first and last eighth, and every third
// layer in between.
bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

uint32_t block_size(DType type) { return traits(type).block_size; }

// The smaller-block type the community uses when rows do not fit `type`; F16 for types that
// have none.
DType fallback_of(DType type) {
  switch (type) {
    case DType::kQ2_K:
    case DType::kQ3_K:
      return DType::kQ4_0;
    case DType::kQ4_K:
      return DType::kQ5_0;
    case DType::kQ5_K:
      return DType::kQ5_1;
    case DType::kQ6_K:
      return DType::kQ8_0;
    default:
      return DType::kF16;
  }
}

bool is_float_type(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

std::optional<uint64_t> get_arch_uint(const gguf::File& file, const std::string& arch,
                                      const char* key) {
  return file.get_uint(arch + "." + key);
}

}  // namespace

const std::vector<FileType>& file_types() {
  static const std::vector<FileType> kTypes = {
      {"Q8_0", kQ8_0, DType::kQ8_0},     {"Q4_0", kQ4_0, DType::kQ4_0},
      {"Q4_1", kQ4_1, DType::kQ4_1},     {"Q5_0", kQ5_0, DType::kQ5_0},
      {"Q5_1", kQ5_1, DType::kQ5_1},     {"Q2_K", kQ2_K, DType::kQ2_K},
      {"Q3_K_S", kQ3_K_S, DType::kQ3_K}, {"Q3_K_M", kQ3_K_M, DType::kQ3_K},
      {"Q3_K_L", kQ3_K_L, DType::kQ3_K}, {"Q4_K_S", kQ4_K_S, DType::kQ4_K},
      {"Q4_K_M", kQ4_K_M, DType::kQ4_K}, {"Q5_K_S", kQ5_K_S, DType::kQ5_K},
      {"Q5_K_M", kQ5_K_M, DType::kQ5_K}, {"Q6_K", kQ6_K, DType::kQ6_K},
  };
  return kTypes;
}

Result<const FileType*> find_file_type(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  std::string names;
  for (const FileType& t : file_types()) {
    if (upper == t.name) return &t;
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  }
  return make_error(ErrorCode::kInvalidArgument, "unsupported quantization type '" +
                                                     std::string(name) + "'; supported: " + names);
}

ModelShape ModelShape::of(const gguf::File& file) {
  ModelShape s;
  s.architecture = file.get_string("general.architecture").value_or("");
  const std::string& a = s.architecture;
  s.n_layers = static_cast<uint32_t>(get_arch_uint(file, a, "block_count").value_or(0));
  s.n_heads = static_cast<uint32_t>(get_arch_uint(file, a, "attention.head_count").value_or(0));
  s.n_kv_heads =
      static_cast<uint32_t>(get_arch_uint(file, a, "attention.head_count_kv").value_or(s.n_heads));
  s.n_experts = static_cast<uint32_t>(get_arch_uint(file, a, "expert_count").value_or(0));
  for (const gguf::TensorInfo& t : file.tensors()) {
    const Category c = category_of(t.name);
    s.has_output |= c == Category::kOutput;
    s.n_attention_v += c == Category::kAttentionV;
  }
  return s;
}

bool is_quantizable_name(std::string_view name, size_t n_dims) {
  if (n_dims < 2 || !name.ends_with("weight")) return false;
  for (std::string_view never : {"_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d", "altup",
                                 "laurel", "attn_rel_b.weight", "per_layer_model_proj"}) {
    if (name.find(never) != std::string_view::npos) return false;
  }
  return name != "position_embd.weight" && name != "token_types.weight";
}

TypeMix::TypeMix(const FileType& file_type, ModelShape shape, bool has_importance, bool pure)
    : file_type_(file_type),
      shape_(std::move(shape)),
      has_importance_(has_importance),
      pure_(pure) {}

DType TypeMix::mixed_type(const std::string& name, uint64_t row_length) {
  const uint32_t ft = file_type_.id;
  const bool falcon = shape_.architecture == "falcon";
  const int n_layers = static_cast<int>(shape_.n_layers);
  DType type = file_type_.default_type;
  const Category category = category_of(name);

  if (category == Category::kOutput ||
      (category == Category::kTokenEmbedding && !shape_.has_output)) {
    // The output projection is the most sensitive matrix: Q6_K unless Q8_0 was asked for.
    if (falcon || row_length % block_size(type) != 0) return DType::kQ8_0;
    return type == DType::kQ8_0 ? type : DType::kQ6_K;
  }
  if (category == Category::kAttentionV) {
    const int i = i_attention_v_++;
    const uint32_t gqa = shape_.n_kv_heads ? shape_.n_heads / shape_.n_kv_heads : 1;
    if (ft == kQ2_K) {
      type = gqa >= 4 ? DType::kQ4_K : DType::kQ3_K;
    } else if (ft == kQ3_K_M) {
      type = i < 2 ? DType::kQ5_K : DType::kQ4_K;
    } else if (ft == kQ3_K_L) {
      type = DType::kQ5_K;
    } else if ((ft == kQ4_K_M || ft == kQ5_K_M) && use_more_bits(i, shape_.n_attention_v)) {
      type = DType::kQ6_K;
    } else if (ft == kQ4_K_S && i < 4) {
      type = DType::kQ5_K;
    }
    // A 70B Llama shares each attn_v among 8 heads: the tensor is small, extra bits are cheap.
    const bool llama_70b = shape_.architecture == "llama" && shape_.n_layers == 80 &&
                           shape_.n_heads != shape_.n_kv_heads;
    if (llama_70b && (type == DType::kQ3_K || type == DType::kQ4_K)) type = DType::kQ5_K;
    if (shape_.n_experts == 8) type = DType::kQ8_0;
    return type;
  }
  if (category == Category::kAttentionK) {
    return shape_.n_experts == 8 ? DType::kQ8_0 : type;
  }
  if (category == Category::kFfnDown) {
    // Expert tensors are not in layer order, so the layer comes from the name when there are
    // experts (and whenever the name carries it; the counter is the community's fallback).
    const int counted = i_ffn_down_++;
    const int i = layer_of(name).value_or(counted);
    if (ft == kQ2_K) {
      type = DType::kQ3_K;
    } else if (ft == kQ3_K_M) {
      type = i < n_layers / 16                       ? DType::kQ5_K
             : !falcon || use_more_bits(i, n_layers) ? DType::kQ4_K
                                                     : DType::kQ3_K;
    } else if (ft == kQ3_K_L) {
      type = falcon ? DType::kQ4_K : DType::kQ5_K;
    } else if (ft == kQ4_K_M) {
      if (falcon) {
        type = i < n_layers / 16            ? DType::kQ6_K
               : use_more_bits(i, n_layers) ? DType::kQ5_K
                                            : DType::kQ4_K;
      } else if (use_more_bits(i, n_layers)) {
        type = DType::kQ6_K;
      }
    } else if (ft == kQ5_K_M && use_more_bits(i, n_layers)) {
      type = DType::kQ6_K;
    } else if (ft == kQ4_K_S && !falcon && i < n_layers / 8) {
      type = DType::kQ5_K;
    } else if ((ft == kQ4_0 || ft == kQ5_0) && has_importance_ && i < n_layers / 8) {
      // The first ffn_down layers can go badly even with an importance matrix: add a min.
      type = ft == kQ4_0 ? DType::kQ4_1 : DType::kQ5_1;
    }
    return type;
  }
  if (category == Category::kAttentionOutput) {
    if (falcon) return ft == kQ3_K_L ? DType::kQ4_K : type;
    if (shape_.n_experts == 8) {
      const bool raise =
          ft == kQ2_K || ft == kQ3_K_S || ft == kQ3_K_M || ft == kQ4_K_S || ft == kQ4_K_M;
      return raise ? DType::kQ5_K : type;
    }
    if (ft == kQ2_K) return DType::kQ3_K;
    if (ft == kQ3_K_M) return DType::kQ4_K;
    if (ft == kQ3_K_L) return DType::kQ5_K;
  }
  return type;
}

TensorChoice TypeMix::choose(const gguf::TensorInfo& tensor) {
  const DType input = tensor.type;
  if (!is_quantizable_name(tensor.name, tensor.dims.size())) return {input, false, ""};
  // Quantized inputs are dequantized and quantized again (the CLI asks for --allow-requantize
  // first); a type strata cannot dequantize is kept.
  if (!is_float_type(input) && !kernels::can_dequantize_scalar(input)) {
    return {input, false,
            "tensor " + tensor.name + " is " + std::string(dtype_name(input)) +
                ", which strata cannot dequantize; kept"};
  }
  const uint64_t row_length = tensor.dims[0];
  DType type = pure_ ? file_type_.default_type : mixed_type(tensor.name, row_length);
  std::string warning;
  if (row_length % block_size(type) != 0) {
    DType fallback = fallback_of(type);
    if (row_length % block_size(fallback) != 0) fallback = DType::kF16;
    warning = "tensor " + tensor.name + " has rows of " + std::to_string(row_length) +
              " elements, not a multiple of the " + std::string(dtype_name(type)) + " block size " +
              std::to_string(block_size(type)) + "; stored as " + std::string(dtype_name(fallback));
    type = fallback;
  }
  return {type, type != input, warning};
}

}  // namespace strata::quant
