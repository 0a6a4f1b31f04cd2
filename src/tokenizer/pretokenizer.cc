#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

// GPT-2's word regex (openai/gpt-2 encoder.py), with the `|\s+` tail that HF's ByteLevel keeps.
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Llama 3's regex (tiktoken cl100k style). The contractions are spelled as classes instead of
// (?i:...), as llama.cpp does: PCRE2's caseless mode would also fold U+017F (long s) and U+212A
// (Kelvin) onto s and k, which the reference tokenizers do not.
constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2: Llama 3's regex with single digits.
constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen3.5: Qwen2's regex with combining marks (\p{M}) kept inside words and out of punctuation.
constexpr const char* kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-4o / Llama 4 (o200k style): case-aware words with optional contraction suffix. PCRE2 has
// the \p{Lu}/\p{Ll}/... classes that llama.cpp has to emulate with lookaheads.
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// DeepSeek LLM (v1): newlines isolated, then explicit Latin/Greek/Cyrillic/... letter ranges,
// ASCII and full-width punctuation, trailing whitespace, CJK runs, digit runs.
// Code points are written as \x{...}: several of them (U+1FD3, U+2126, U+212A, ...) have
// canonical equivalents that an editor may silently normalise, which would break the ranges.
constexpr const char* kDeepseekLlmLetters =
    R"(\s?[)"
    R"(A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D})"
    R"(\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3})"
    R"(\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})"
    R"(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})"
    R"(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})"
    R"(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF})"
    R"(\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})"
    R"(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
    R"(\x{1E900}-\x{1E943})"
    R"(]+)";

// Poro / BLOOM / GPT-3 Finnish: runs up to whitespace or sentence punctuation.
constexpr const char* kPoro = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

}  // namespace

Result<PreTokenizerRecipe> find_pre_tokenizer_recipe(std::string_view name) {
  PreTokenizerRecipe recipe;
  auto is = [&](std::initializer_list<std::string_view> names) {
    for (std::string_view n : names) {
      if (name == n) return true;
    }
    return false;
  };
  if (name.empty() || name == "default") {
    recipe.patterns = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"};
  } else if (is({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
                 "lfm2"})) {
    recipe.patterns = {kLlama3};
    recipe.ignore_merges = true;
  } else if (is({"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"})) {
    recipe.patterns = {kLlama3};
  } else if (name == "deepseek-llm") {
    recipe.patterns = {
        "[\\r\\n]",
        kDeepseekLlmLetters,
        R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
        R"(\s+$)",
        R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)",
        R"(\p{N}+)"};
  } else if (name == "deepseek-coder") {
    recipe.patterns = {"[\\r\\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)",
                       R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)", R"(\p{N})"};
  } else if (is({"deepseek-v3", "hunyuan-dense"})) {
    recipe.patterns = {
        R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  } else if (name == "falcon") {
    recipe.patterns = {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"};
  } else if (is({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone",
                 "minerva-7b"})) {
    recipe.patterns = {R"(\p{N})", kGpt2};
  } else if (is({"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling",
                 "roberta-bpe", "jina-es", "jina-de", "jina-v1-en", "jina-v2-es", "jina-v2-de",
                 "jina-v2-code", "gigachat"})) {
    recipe.patterns = {kGpt2};
  } else if (is({"qwen2", "stablelm2", "deepseek-r1-qwen", "megrez", "hunyuan", "grok-2"})) {
    recipe.patterns = {kQwen2};
  } else if (name == "qwen35") {
    recipe.patterns = {kQwen35};
  } else if (is({"gpt-4o", "llama4", "minimax-m2"})) {
    recipe.patterns = {kGpt4o};
    recipe.ignore_merges = name == "llama4";
  } else if (name == "tekken") {
    recipe.patterns = {kTekken};
  } else if (is({"poro-chat", "bloom", "gpt3-finnish"})) {
    recipe.patterns = {kPoro};
  } else if (name == "viking") {
    recipe.patterns = {kPoro, R"(\p{N})"};
  } else if (name == "gemma4") {
    // Gemma 4 runs BPE over SentencePiece-style text: spaces become U+2581 and only newline runs
    // are split off; symbols are UTF-8 characters with <0xXX> byte fallback.
    recipe.patterns = {R"([^\n]+|[\n]+)"};
    recipe.byte_encode = false;
    recipe.escape_spaces = true;
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "unknown BPE pre-tokenizer '" + std::string(name) +
                          "' (tokenizer.ggml.pre); strata cannot split text for this model");
  }
  return recipe;
}

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
};

PreTokenizer::PreTokenizer(std::vector<Compiled> regexes) : regexes_(std::move(regexes)) {}

PreTokenizer::~PreTokenizer() {
  for (Compiled& regex : regexes_) pcre2_code_free(regex.code);
}

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::compile(
    const std::vector<std::string>& patterns) {
  std::vector<Compiled> regexes;
  auto free_all = [&] {
    for (Compiled& regex : regexes) pcre2_code_free(regex.code);
  };
  for (const std::string& pattern : patterns) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      free_all();
      return make_error(ErrorCode::kInternal, "pre-tokenizer regex /" + pattern +
                                                  "/ does not compile at offset " +
                                                  std::to_string(error_offset) + ": " +
                                                  reinterpret_cast<const char*>(message));
    }
    // JIT is an optimisation only; without it pcre2_match interprets the pattern.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    regexes.push_back(Compiled{code});
  }
  return std::unique_ptr<PreTokenizer>(new PreTokenizer(std::move(regexes)));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>* pieces) const {
  if (regexes_.empty()) {
    if (!text.empty()) pieces->push_back(text);
    return;
  }
  pcre2_match_data* match_data = pcre2_match_data_create(1, nullptr);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t valid = utf8_valid_prefix(text.substr(pos));
    if (valid > 0) {
      split_valid(0, text.substr(pos, valid), pieces, match_data);
      pos += valid;
    } else {
      pieces->push_back(text.substr(pos, 1));
      ++pos;
    }
  }
  pcre2_match_data_free(match_data);
}

void PreTokenizer::split_valid(size_t regex_index, std::string_view text,
                               std::vector<std::string_view>* pieces, void* match_data_ptr) const {
  if (regex_index == regexes_.size()) {
    pieces->push_back(text);
    return;
  }
  auto* match_data = static_cast<pcre2_match_data*>(match_data_ptr);
  auto emit = [&](size_t begin, size_t end) {
    if (end > begin)
      split_valid(regex_index + 1, text.substr(begin, end - begin), pieces, match_data);
  };
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap_start = 0;  // start of the text not yet covered by a match
  size_t search = 0;
  while (search < text.size()) {
    const int rc = pcre2_match(regexes_[regex_index].code, subject, text.size(), search,
                               PCRE2_NO_UTF_CHECK, match_data, nullptr);
    if (rc < 0) break;  // no match (or a resource limit): the rest is one gap piece
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data);
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (begin >= text.size()) break;
    if (end == begin) {
      // An empty match splits nothing; step over one character and keep looking.
      search = begin + utf8_sequence_length(static_cast<uint8_t>(text[begin]));
      continue;
    }
    emit(gap_start, begin);
    emit(begin, end);
    gap_start = end;
    search = end;
  }
  emit(gap_start, text.size());
}

}  // namespace strata::tokenizer
