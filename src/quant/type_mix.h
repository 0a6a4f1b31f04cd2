// Which type each tensor of a model gets when quantizing to a file type (Q4_K_M, Q8_0, ...): the
// per-tensor rules of the GGUF community's quantizer (llama.cpp's llama_tensor_get_type), so
// that strata's files have the same mix of types as the files users download.
//
// The _S/_M/_L variants share a default type and differ in which tensors are raised: e.g. Q4_K_M
// stores attn_v and ffn_down at Q6_K in the first and last eighth of the layers and in every
// third layer between; output.weight (or token_embd.weight when the output reuses it) gets Q6_K.
// A matrix whose rows do not fit the chosen type's block falls back to a smaller-block type
// (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0), and to F16 when no quantized
// type fits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/result.h"
#include "gguf/gguf.h"

namespace strata::quant {

// A file type: the name users pass, llama.cpp's LLAMA_FTYPE id (general.file_type) and the type
// most tensors get.
struct FileType {
  std::string_view name;
  uint32_t id;
  DType default_type;
};

// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K.
const std::vector<FileType>& file_types();
// Case-insensitive; kInvalidArgument listing the supported names.
Result<const FileType*> find_file_type(std::string_view name);

// What the rules need to know about the model, read from its metadata and tensor names.
struct ModelShape {
  std::string architecture;
  uint32_t n_layers = 0;
  uint32_t n_heads = 0;
  uint32_t n_kv_heads = 0;
  uint32_t n_experts = 0;
  bool has_output = false;  // output.weight present (else token_embd.weight doubles as output)
  int n_attention_v = 0;    // attn_v / attn_qkv / attn_kv_b tensors

  static ModelShape of(const gguf::File& file);
};

// The choice for one tensor.
struct TensorChoice {
  DType type;           // the input type when the tensor is kept
  bool quantize;        // type differs from the input's
  std::string warning;  // why a fallback or a copy happened, empty otherwise
};

class TypeMix {
 public:
  // pure: every quantizable matrix gets the default type (llama-quantize --pure); the row-length
  // fallback still applies.
  TypeMix(const FileType& file_type, ModelShape shape, bool has_importance, bool pure);

  // Call once per tensor, in file order. A tensor already quantized is chosen a type like a
  // float one (quantize_model dequantizes it first; `strata quantize` asks for
  // --allow-requantize); one of a type strata cannot dequantize is kept.
  TensorChoice choose(const gguf::TensorInfo& tensor);

 private:
  DType mixed_type(const std::string& name, uint64_t row_length);

  FileType file_type_;
  ModelShape shape_;
  bool has_importance_;
  bool pure_;
  int i_attention_v_ = 0;  // attn_v-like tensors seen so far
  int i_ffn_down_ = 0;
};

// True for the tensors the community quantizes: 2-D and 3-D `*weight` tensors except norms,
// expert routers and positional/token-type embeddings.
bool is_quantizable_name(std::string_view name, size_t n_dims);

}  // namespace strata::quant
