// Builds a Tokenizer::Model from a VocabSpec, applying llama.cpp's per-model defaults
// (llama_vocab::impl::load) where the GGUF leaves a key out.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <utility>

#include "tokenizer/model.h"

namespace strata::tokenizer {
namespace {

std::string byte_token_text(int byte) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", byte);
  return buf;
}

// Token texts that end generation in chat models even when no eot/eom id is stored.
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>",      "<|im_end|>",
    "<|end|>",         "<end_of_turn>",
    "<|endoftext|>",   "<EOT>",
    "_<EOT>",          "<｜end▁of▁sentence｜>",
    "<|end_of_text|>", "<end_of_utterance>",
    "<|return|>",      "<|call|>",
    "<|eom_id|>",
};

Status build_merges(const std::vector<std::string>& merges, Tokenizer::Model* model) {
  model->merges.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& merge = merges[rank];
    // "left right"; the search starts at 1 so that a left part may itself begin with a space.
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos) {
      return make_error(ErrorCode::kInvalidFile, "tokenizer.ggml.merges[" + std::to_string(rank) +
                                                     "] = '" + merge +
                                                     "' is not 'left right'; the GGUF is corrupt");
    }
    const std::string_view left = std::string_view(merge).substr(0, space);
    const std::string_view right = std::string_view(merge).substr(space + 1);
    const TokenId left_id = model->find(left);
    const TokenId right_id = model->find(right);
    // A rule whose parts are not tokens can never fire: symbols always carry token ids.
    if (left_id < 0 || right_id < 0) continue;
    joined.assign(left);
    joined.append(right);
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(left_id)) << 32) |
                         static_cast<uint32_t>(right_id);
    // The first (highest priority) rule for a pair wins.
    model->merges.emplace(key, MergeRule{static_cast<int32_t>(rank), model->find(joined)});
  }
  return ok_status();
}

bool contains_any(std::string_view text, std::initializer_list<std::string_view> needles) {
  for (std::string_view needle : needles) {
    if (text.find(needle) != std::string_view::npos) return true;
  }
  return false;
}

// The lstrip/rstrip attributes llama.cpp assigns by model name (GGUF does not store them).
void set_strip_attributes(const VocabSpec& spec, Tokenizer::Model* model) {
  model->strip.assign(model->tokens.size(), 0);
  auto set = [&](std::string_view text, uint8_t flag, bool on) {
    const TokenId id = model->find(text);
    if (id < 0) return;
    if (on) {
      model->strip[id] |= flag;
    } else {
      model->strip[id] &= static_cast<uint8_t>(~flag);
    }
  };
  std::string name = spec.name;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (contains_any(spec.pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      contains_any(spec.architecture, {"nomic-bert-moe", "jina-bert-v3"})) {
    set("<mask>", Tokenizer::Model::kStripLeft, true);
  } else if (contains_any(name, {"phi-3", "phi3"})) {
    for (TokenId id : model->special_by_length) model->strip[id] |= Tokenizer::Model::kStripRight;
    set("</s>", Tokenizer::Model::kStripRight, true);
    for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) {
      set(text, Tokenizer::Model::kStripRight, false);
    }
  } else if (contains_any(name, {"modern-bert"})) {
    set("[MASK]", Tokenizer::Model::kStripLeft, true);
  }
}

}  // namespace

Result<std::unique_ptr<Tokenizer::Model>> build_model(VocabSpec spec) {
  auto model = std::make_unique<Tokenizer::Model>();
  const size_t n = spec.tokens.size();
  if (n == 0) {
    return make_error(ErrorCode::kInvalidFile,
                      "the vocabulary has no tokens (tokenizer.ggml.tokens is empty)");
  }
  if (n > static_cast<size_t>(INT32_MAX)) {
    return make_error(ErrorCode::kInvalidFile, "the vocabulary has more than 2^31 tokens");
  }
  if (!spec.scores.empty() && spec.scores.size() != n) {
    return make_error(ErrorCode::kInvalidFile,
                      "tokenizer.ggml.scores has " + std::to_string(spec.scores.size()) +
                          " entries but there are " + std::to_string(n) + " tokens");
  }
  if (!spec.types.empty() && spec.types.size() != n) {
    return make_error(ErrorCode::kInvalidFile,
                      "tokenizer.ggml.token_type has " + std::to_string(spec.types.size()) +
                          " entries but there are " + std::to_string(n) + " tokens");
  }
  model->model_name = spec.model;
  model->pre_name = spec.pre.empty() ? "default" : spec.pre;
  model->tokens = std::move(spec.tokens);
  model->scores = std::move(spec.scores);
  model->types = std::move(spec.types);
  if (model->types.empty()) model->types.assign(n, TokenType::kNormal);
  for (TokenType& type : model->types) {
    const int value = static_cast<int>(type);
    if (value < 1 || value > 6) type = TokenType::kNormal;  // unknown kinds: treat as text
  }

  model->text_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    model->text_to_id[model->tokens[i]] = static_cast<TokenId>(i);
    model->max_token_bytes = std::max(model->max_token_bytes, model->tokens[i].size());
  }

  auto valid_or_absent = [&](TokenId id) { return model->valid(id) ? id : -1; };
  model->bos = valid_or_absent(spec.bos);
  model->eos = valid_or_absent(spec.eos);
  model->unk = valid_or_absent(spec.unk);
  model->sep = valid_or_absent(spec.sep);
  model->pad = valid_or_absent(spec.pad);
  model->eot = valid_or_absent(spec.eot);
  model->eom = valid_or_absent(spec.eom);

  model->byte_token.fill(-1);
  if (spec.model == "llama") {
    model->algorithm = Algorithm::kSentencePiece;
    model->add_bos = true;
    model->add_space_prefix = true;
    model->spm_words_independent =
        std::none_of(model->tokens.begin(), model->tokens.end(), [](const std::string& token) {
          constexpr std::string_view kSpace = "\xE2\x96\x81";
          size_t leading = 0;
          while (std::string_view(token).substr(leading, kSpace.size()) == kSpace) {
            leading += kSpace.size();
          }
          return token.find(kSpace, leading) != std::string::npos;
        });
    for (int b = 0; b < 256; ++b) {
      TokenId id = model->find(byte_token_text(b));
      if (id < 0 && b < 0x80) id = model->find(std::string(1, static_cast<char>(b)));
      model->byte_token[b] = id;
    }
  } else if (spec.model == "gpt2" || spec.model == "gemma4") {
    model->algorithm = Algorithm::kBytePairEncoding;
    // llama.cpp ignores tokenizer.ggml.pre for the gemma4 model: it is always "gemma4".
    const std::string pre_name = spec.model == "gemma4" ? "gemma4" : spec.pre;
    model->pre_name = pre_name.empty() ? "default" : pre_name;
    STRATA_ASSIGN_OR_RETURN(PreTokenizerRecipe recipe, find_pre_tokenizer_recipe(pre_name));
    STRATA_ASSIGN_OR_RETURN(model->pre, PreTokenizer::compile(recipe.patterns));
    model->byte_encode = recipe.byte_encode;
    model->escape_spaces = recipe.escape_spaces;
    model->ignore_merges = recipe.ignore_merges;
    // llama.cpp adds BOS by default only for the Llama 3 family.
    model->add_bos = recipe.ignore_merges && pre_name != "llama4";
    for (int b = 0; b < 256; ++b) {
      model->byte_token[b] = model->byte_encode
                                 ? model->find(model->alphabet.encode(static_cast<uint8_t>(b)))
                                 : model->find(byte_token_text(b));
    }
    STRATA_RETURN_IF_ERROR(build_merges(spec.merges, model.get()));
  } else if (spec.model == "bert") {
    model->algorithm = Algorithm::kWordPiece;
    model->add_bos = true;  // [CLS] ... [SEP]
    model->add_eos = true;
    if (model->eos < 0) model->eos = model->sep;
  } else if (spec.model == "t5") {
    model->algorithm = Algorithm::kUnigram;
    model->add_eos = true;  // T5 ends every input with </s>
    model->add_space_prefix = true;
    model->remove_extra_whitespaces = spec.remove_extra_whitespaces.value_or(false);
    float min_score = 0;
    bool any_normal = false;
    for (size_t i = 0; i < n; ++i) {
      if (model->types[i] != TokenType::kNormal || model->scores.empty()) continue;
      min_score = any_normal ? std::min(min_score, model->scores[i]) : model->scores[i];
      any_normal = true;
    }
    model->unknown_score = static_cast<double>(min_score) - 10.0;
    STRATA_RETURN_IF_ERROR(load_charsmap(spec.precompiled_charsmap, model.get()));
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "tokenizer model '" + spec.model +
                          "' (tokenizer.ggml.model) is not supported; strata reads llama, gpt2, "
                          "gemma4, bert and t5 vocabularies");
  }
  if (spec.add_bos) model->add_bos = *spec.add_bos;
  if (spec.add_eos) model->add_eos = *spec.add_eos;
  if (spec.add_space_prefix) model->add_space_prefix = *spec.add_space_prefix;

  for (size_t i = 0; i < n; ++i) {
    const TokenType type = model->types[i];
    if ((type == TokenType::kControl || type == TokenType::kUserDefined ||
         type == TokenType::kUnknown) &&
        !model->tokens[i].empty()) {
      model->special_by_length.push_back(static_cast<TokenId>(i));
    }
  }
  std::stable_sort(
      model->special_by_length.begin(), model->special_by_length.end(),
      [&](TokenId a, TokenId b) { return model->tokens[a].size() > model->tokens[b].size(); });

  for (size_t rank = 0; rank < model->special_by_length.size(); ++rank) {
    const TokenId id = model->special_by_length[rank];
    const auto first = static_cast<uint8_t>(model->tokens[id][0]);
    model->special_by_first_byte[first].push_back(static_cast<uint32_t>(rank));
    if (model->type(id) == TokenType::kUserDefined) {
      model->user_defined_by_first_byte[first].push_back(static_cast<uint32_t>(rank));
    }
  }

  set_strip_attributes(spec, model.get());

  for (TokenId id : {model->eos, model->eot, model->eom}) {
    if (id >= 0) model->end_of_generation.insert(id);
  }
  for (std::string_view text : kEndOfGenerationTexts) {
    const TokenId id = model->find(text);
    if (id >= 0) model->end_of_generation.insert(id);
  }
  return model;
}

}  // namespace strata::tokenizer
