// Synthetic long-context tasks for `strata eval --task`: passkey retrieval, multi-key retrieval
// and variable tracking, in exactly the formats the testbed models were trained on
// (tools/train/tasks.py, which follows the published ones):
// - passkey: landmark attention's prompt (Mohtashami & Jaggi, 2023): intro, repeated
//   grass/sky filler, "The pass key is K. Remember it. K is the pass key." on its own line;
// - multikey: RULER's niah_multikey_1 (Hsieh et al., 2024): four "special magic number" needles
//   in lines of real text, the first one asked for;
// - vt: RULER's variable tracking, one chain of four hops in the grass/sky filler.
//
// A case is a function of (seed, task, length, depth, sample) alone: the random choices come
// from a splitmix64 generator with explicit range mappings (std:: distributions differ between
// standard libraries), so every machine makes the same prompts, and the filler is sized with the
// model's own tokenizer.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "strata/engine.h"
#include "strata/result.h"

namespace strata::bench {

enum class LongTask { kPasskey, kMultikey, kVt };

const char* long_task_name(LongTask task);
std::optional<LongTask> parse_long_task(std::string_view name);

// splitmix64 (Steele, Lea & Flood, 2014): 64 bits per call, identical on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, n), n > 0: rejection of the top partial range, then modulo.
  uint64_t below(uint64_t n);
  // Uniform in [0, 1): the top 53 bits as a double's mantissa.
  double unit();

 private:
  uint64_t state_;
};

// The generator's seed for one case: the run's seed mixed with everything that names the case
// (the depth as integer millionths, so 0.1 typed anywhere gives the same prompts).
uint64_t case_seed(uint64_t seed, LongTask task, int length, double depth, int sample);

// Text to token ids, as the model's tokenizer makes them (add_special: with BOS).
using TokenizeFn = std::function<std::vector<TokenId>(std::string_view text, bool add_special)>;

// Token counts of text pieces as they tokenize inside a longer text, cached: the count of
// `sep + text` right after a '.' (SentencePiece splits at whitespace, so a piece that starts with
// a space or a newline never merges with what is before it).
class PieceCounter {
 public:
  explicit PieceCounter(TokenizeFn tokenize);
  int count(std::string_view text, char sep);
  // The whole text's tokens, BOS included.
  int count_prompt(std::string_view prompt) const;

 private:
  TokenizeFn tokenize_;
  int anchor_tokens_ = 0;
  std::unordered_map<std::string, int> cache_;
};

// One prompt: raw text (no BOS; the engine adds it), the expected answer (passkey/multikey: the
// digits; vt: the five names separated by single spaces) and its prompt's token count with BOS.
struct TaskCase {
  LongTask task = LongTask::kPasskey;
  int length = 0;  // the token budget asked for (BOS included); tokens <= length
  double depth = 0;
  int sample = 0;
  std::string prompt;
  std::string answer;
  int tokens = 0;
  int answer_tokens = 0;  // the answer's tokens as they follow the prompt (after a space)
};

struct CaseSpec {
  LongTask task = LongTask::kPasskey;
  uint64_t seed = 0;
  int length = 0;
  double depth = 0;
  int sample = 0;
};

// The lines of a text with something other than whitespace on them, for multikey's haystack.
Result<std::vector<std::string>> read_haystack(const std::string& path);

// Builds a case: intro, filler with the needles at their depths, question, in at most
// spec.length tokens and as close to it as whole filler units allow. The first needle goes at
// filler unit round(depth * units) (round half to even, as Python's round). `haystack` is needed
// by multikey only. Fails when the intro, needles and question alone do not fit.
Result<TaskCase> make_task_case(const CaseSpec& spec, PieceCounter& counter,
                                const std::vector<std::string>* haystack);

}  // namespace strata::bench
