// Reads the tokenizer.ggml.* metadata of a GGUF file into a VocabSpec.
#include <cmath>
#include <string>

#include "gguf/gguf.h"
#include "tokenizer/model.h"
#include "tokenizer/tokenizer.h"

namespace strata::tokenizer {
namespace {

Result<const gguf::Array*> find_array(const gguf::File& file, std::string_view key, bool required) {
  const gguf::Value* value = file.find(key);
  if (value == nullptr) {
    if (!required) return static_cast<const gguf::Array*>(nullptr);
    return make_error(ErrorCode::kNotFound,
                      "GGUF has no '" + std::string(key) + "'; it carries no usable vocabulary");
  }
  const gguf::Array* array = value->as_array();
  if (array == nullptr) {
    return make_error(ErrorCode::kInvalidFile,
                      "GGUF key '" + std::string(key) + "' is not an array; the file is corrupt");
  }
  return array;
}

Status read_strings(const gguf::File& file, std::string_view key, bool required,
                    std::vector<std::string>* out) {
  STRATA_ASSIGN_OR_RETURN(const gguf::Array* array, find_array(file, key, required));
  if (array == nullptr) return ok_status();
  out->reserve(array->values.size());
  for (size_t i = 0; i < array->values.size(); ++i) {
    const std::string* text = array->values[i].as_string();
    if (text == nullptr) {
      return make_error(ErrorCode::kInvalidFile, "GGUF '" + std::string(key) + "[" +
                                                     std::to_string(i) + "]' is not a string");
    }
    out->push_back(*text);
  }
  return ok_status();
}

TokenId read_id(const gguf::File& file, std::string_view key) {
  const std::optional<int64_t> value = file.get_int(key);
  if (!value || *value < 0 || *value > INT32_MAX) return -1;
  return static_cast<TokenId>(*value);
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const gguf::File& file) {
  VocabSpec spec;
  const std::optional<std::string> model = file.get_string("tokenizer.ggml.model");
  if (!model) {
    return make_error(ErrorCode::kNotFound,
                      "GGUF has no tokenizer.ggml.model; this file carries no vocabulary");
  }
  spec.model = *model;
  spec.pre = file.get_string("tokenizer.ggml.pre").value_or("");
  spec.name = file.get_string("general.name").value_or("");
  spec.architecture = file.get_string("general.architecture").value_or("");
  STRATA_RETURN_IF_ERROR(read_strings(file, "tokenizer.ggml.tokens", true, &spec.tokens));
  STRATA_RETURN_IF_ERROR(read_strings(file, "tokenizer.ggml.merges", false, &spec.merges));

  STRATA_ASSIGN_OR_RETURN(const gguf::Array* scores,
                          find_array(file, "tokenizer.ggml.scores", false));
  if (scores != nullptr) {
    spec.scores.reserve(scores->values.size());
    for (size_t i = 0; i < scores->values.size(); ++i) {
      const std::optional<double> score = scores->values[i].as_float();
      if (!score) {
        return make_error(ErrorCode::kInvalidFile, "tokenizer.ggml.scores holds a non-number");
      }
      // SentencePiece and Unigram rank pieces by score; a NaN breaks the ordering their queues
      // and comparisons rely on (infinities still order, so they stay allowed).
      if (std::isnan(*score)) {
        return make_error(ErrorCode::kInvalidFile,
                          "tokenizer.ggml.scores[" + std::to_string(i) + "] is nan (file corrupt)");
      }
      spec.scores.push_back(static_cast<float>(*score));
    }
  }
  STRATA_ASSIGN_OR_RETURN(const gguf::Array* types,
                          find_array(file, "tokenizer.ggml.token_type", false));
  if (types != nullptr) {
    spec.types.reserve(types->values.size());
    for (const gguf::Value& value : types->values) {
      const std::optional<int64_t> type = value.as_int();
      if (!type) {
        return make_error(ErrorCode::kInvalidFile, "tokenizer.ggml.token_type holds a non-integer");
      }
      spec.types.push_back(static_cast<TokenType>(*type));
    }
  }

  spec.bos = read_id(file, "tokenizer.ggml.bos_token_id");
  spec.eos = read_id(file, "tokenizer.ggml.eos_token_id");
  spec.unk = read_id(file, "tokenizer.ggml.unknown_token_id");
  spec.sep = read_id(file, "tokenizer.ggml.seperator_token_id");  // sic: the GGUF key's spelling
  spec.pad = read_id(file, "tokenizer.ggml.padding_token_id");
  spec.eot = read_id(file, "tokenizer.ggml.eot_token_id");
  spec.eom = read_id(file, "tokenizer.ggml.eom_token_id");
  // BERT stores [CLS] as cls_token_id; it plays BOS's role.
  if (spec.bos < 0) spec.bos = read_id(file, "tokenizer.ggml.cls_token_id");
  spec.add_bos = file.get_bool("tokenizer.ggml.add_bos_token");
  spec.add_eos = file.get_bool("tokenizer.ggml.add_eos_token");
  if (!spec.add_eos) spec.add_eos = file.get_bool("tokenizer.ggml.add_sep_token");
  spec.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix");
  spec.remove_extra_whitespaces = file.get_bool("tokenizer.ggml.remove_extra_whitespaces");
  STRATA_ASSIGN_OR_RETURN(const gguf::Array* charsmap,
                          find_array(file, "tokenizer.ggml.precompiled_charsmap", false));
  if (charsmap != nullptr) {
    spec.precompiled_charsmap.reserve(charsmap->values.size());
    for (const gguf::Value& value : charsmap->values) {
      const std::optional<int64_t> byte = value.as_int();
      if (!byte || *byte < -128 || *byte > 255) {
        return make_error(ErrorCode::kInvalidFile,
                          "tokenizer.ggml.precompiled_charsmap holds a value that is not a byte");
      }
      spec.precompiled_charsmap.push_back(static_cast<uint8_t>(*byte));
    }
  }
  return from_spec(std::move(spec));
}

}  // namespace strata::tokenizer
