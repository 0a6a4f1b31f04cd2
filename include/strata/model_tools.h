// strata's model file tools: synthesize a GGUF with random weights at
// realistic shapes (for speed measurements without downloading a model), and quantize a GGUF's
// weight matrices to the GGUF block formats with the community's per-tensor type mixes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "strata/result.h"
#include "strata/threads.h"

namespace strata {

// Progress of a tool writing a model file, reported after each tensor.
struct WriteProgress {
  size_t tensor_index = 0;  // tensors finished, 1..tensor_count
  size_t tensor_count = 0;
  std::string tensor_name;  // the tensor just finished
  uint64_t bytes_done = 0;  // input bytes processed (quantize) or output bytes written (synth)
  uint64_t bytes_total = 0;
  double elapsed_seconds = 0;
};
using WriteProgressCallback = std::function<void(const WriteProgress&)>;

// One status line: "[  12/147] 0.40 / 2.47 GB, 3 s elapsed, ETA 15 s  blk.1.ffn_up.weight".
std::string format_progress(const WriteProgress& progress);

struct SynthOptions {
  std::string preset = "tiny";  // one of synth_preset_names()
  std::string arch = "llama";   // one of synth_architecture_names()
  std::string output_path;
  std::string type = "F16";  // weight matrices: F16 or F32 (norms are always F32)
  std::string vocab_path = "../shared/models/stories260K.gguf";  // tokenizer.* keys come from here
  // Pads the copied vocabulary with reserved control tokens up to this size (e.g. 128256, Llama
  // 3's), for the embedding and output shapes of a model whose tokenizer file is not at hand.
  // 0 keeps the copied size.
  uint64_t n_vocab = 0;
  uint64_t seed = 0;
  // 0: one per hardware thread; at most kMaxThreads. The file does not depend on it.
  int threads = 0;
  // `<arch>.pooling_type` to write (1 mean, 2 cls, 3 last: an embedding model); -1 writes none.
  int pooling_type = -1;
};

// "tiny", "tiny-gqa", "llama-1b", "llama-3b", "llama-8b", "gemma3-1b": the sizes.
std::vector<std::string> synth_preset_names();

// "llama", "gemma", "gemma2", "gemma3", "qwen3", "smollm3", "granite", "mistral3", "phi3",
// "olmo2": what the file adds to the Llama block at a preset's size (norms, q/k norms, sliding
// windows, soft-caps, RoPE variants, multipliers, fused projections).
std::vector<std::string> synth_architecture_names();

// Writes a GGUF whose weights are drawn from a seeded generator: the same options give a
// byte-identical file on every platform and thread count. Tensors are generated while the file
// is written, one at a time, so an 8B model needs memory for its largest tensor only.
Status synthesize_model(const SynthOptions& options, const WriteProgressCallback& progress = {});

struct QuantizeOptions {
  std::string input_path;
  std::string output_path;
  std::string type;  // one of quantize_type_names(), case-insensitive
  int threads = 0;   // 0: one per hardware thread; at most kMaxThreads
  // An importance matrix from llama-imatrix (GGUF `*.in_sum2`/`*.counts`, or the legacy .dat
  // format): each tensor's scale search weights squared errors by its columns' importance.
  std::string imatrix_path;
  // Every quantizable matrix at the type's default type (no raised attn_v/ffn_down/output);
  // rows that do not fit still fall back.
  bool pure = false;
  // An input whose weight matrices are already quantized is refused (kInvalidArgument, naming
  // the first): requantizing loses more than quantizing the F32/F16/BF16 original. With this set
  // such matrices are dequantized and quantized again (llama.cpp's --allow-requantize).
  bool allow_requantize = false;
};

// The file types, as llama-quantize names them: "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K",
// "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K".
std::vector<std::string> quantize_type_names();

struct TensorQuantizeReport {
  std::string name;
  std::string input_type;   // "f32", "f16", ...
  std::string output_type;  // the input's type when the tensor is kept
  uint64_t n_elements = 0;
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;
  bool quantized = false;
  // RMS of (dequantized output - input) over RMS of the input; 0 for kept tensors.
  double relative_rmse = 0;
  bool importance_weighted = false;  // the importance matrix had an entry for this tensor
};

struct QuantizeReport {
  std::string file_type;                      // the canonical name, e.g. "Q4_K_M"
  uint32_t file_type_id = 0;                  // general.file_type (llama.cpp's LLAMA_FTYPE)
  std::vector<TensorQuantizeReport> tensors;  // in file order
  // Tensors that fell back to another type or were kept, quantized tensors the importance matrix
  // has no entry for (one line each).
  std::vector<std::string> warnings;
  uint64_t input_bytes = 0;   // tensor data only
  uint64_t output_bytes = 0;  // tensor data only
  double seconds = 0;
};

// Quantizes the weight matrices of a F32/F16/BF16 model to the file type's per-tensor types
// (the community's mix: e.g. Q4_K_M keeps some attn_v and ffn_down tensors and the output at
// Q6_K), with fallbacks for rows that do not fit a type's block; copies every other tensor and
// all metadata, and sets general.file_type. The output does not depend on the thread count.
Result<QuantizeReport> quantize_model(const QuantizeOptions& options,
                                      const WriteProgressCallback& progress = {});

}  // namespace strata
