// Importance matrices (llama-imatrix's output): for each weight matrix, the mean of the squared
// activation each input column met on a calibration text. The quantizer's scale search weights
// each element's squared error by its column's value, so that the columns that carry large
// activations are represented best.
//
// Two file formats are read:
//  - GGUF (llama-imatrix's default since mid-2025): per matrix a F32 tensor `NAME.in_sum2` of
//    shape [columns, n_mat] (summed squared activations, one row per expert) and a F32 tensor
//    `NAME.counts` of shape [1, n_mat] (how many activations were summed); importance is
//    in_sum2 / counts (1 where a count is zero, as llama.cpp does).
//  - The older binary `.dat` format: int32 entry count, then per entry an int32 name length, the
//    name, an int32 call count and an int32 value count followed by that many f32 values (already
//    averaged per call); importance is values / calls. A trailing chunk count and dataset name
//    may follow and are ignored.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"

namespace strata::quant {

struct ImportanceMatrix {
  // Tensor name -> columns * n_mat importance values (n_mat > 1 only for expert tensors).
  std::unordered_map<std::string, std::vector<float>> values;
  std::string format;  // "gguf" or "dat"

  // The entry for `tensor_name`, or null.
  const std::vector<float>* find(const std::string& tensor_name) const;
};

// kInvalidFile naming the problem for malformed files (truncated, inconsistent shapes, negative or
// non-finite values, no entries); kNotFound / kIo when the file cannot be read.
Result<ImportanceMatrix> load_importance_matrix(const std::string& path);

}  // namespace strata::quant
