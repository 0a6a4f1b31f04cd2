#include "bench/long_tasks.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

namespace strata::bench {
namespace {

// The texts of tools/train/tasks.py, word for word: the models learned these.
constexpr std::string_view kPasskeyIntro =
    "There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
    "I will quiz you about the important information there.";
constexpr std::string_view kGarbage[] = {"The grass is green.", "The sky is blue.",
                                         "The sun is yellow.", "Here we go.",
                                         "There and back again."};
constexpr std::string_view kPasskeyQuestion = "What is the pass key? The pass key is";
constexpr std::string_view kMultikeyIntro =
    "Some special magic numbers are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the numbers afterwards.";
constexpr std::string_view kVtIntro =
    "Memorize and track the chain(s) of variable assignment hidden in the following text.";
constexpr int kVtHops = 4;
constexpr int kMultikeyKeys = 4;

constexpr std::string_view kAdjectives[] = {
    "abundant", "agreeable", "ancient", "brave",   "bright", "calm",    "careful", "clever",
    "cold",     "curious",   "damp",    "dark",    "eager",  "early",   "elegant", "empty",
    "fancy",    "fierce",    "gentle",  "golden",  "grand",  "green",   "happy",   "heavy",
    "hollow",   "honest",    "humble",  "icy",     "jolly",  "kind",    "large",   "lazy",
    "little",   "lively",    "lonely",  "loud",    "lucky",  "mellow",  "misty",   "modern",
    "narrow",   "noisy",     "odd",     "old",     "pale",   "patient", "plain",   "polite",
    "proud",    "quick",     "quiet",   "rapid",   "rare",   "red",     "rich",    "rough",
    "round",    "royal",     "rustic",  "salty",   "sharp",  "shiny",   "silent",  "silver",
    "simple",   "slow",      "small",   "smooth",  "soft",   "solid",   "sour",    "spicy",
    "steady",   "steep",     "stormy",  "strange", "sturdy", "sunny",   "sweet",   "swift",
    "tall",     "tender",    "thick",   "tiny",    "tidy",   "vast",    "warm",    "wet",
    "whole",    "wild",      "windy",   "wise",    "wooden", "young"};
constexpr std::string_view kNouns[] = {
    "anchor",  "apple",    "arrow",   "autumn",   "badge",  "basket",   "beach",   "bell",
    "berry",   "blanket",  "boat",    "bottle",   "bridge", "brush",    "bucket",  "cabin",
    "candle",  "canyon",   "carpet",  "castle",   "cloud",  "clover",   "comet",   "copper",
    "cottage", "crown",    "desert",  "diamond",  "dragon", "drum",     "eagle",   "ember",
    "engine",  "falcon",   "feather", "fence",    "forest", "fountain", "garden",  "glacier",
    "glove",   "harbor",   "hammer",  "harvest",  "helmet", "island",   "ivory",   "jacket",
    "jungle",  "kettle",   "ladder",  "lantern",  "lemon",  "library",  "lion",    "marble",
    "meadow",  "mirror",   "monkey",  "mountain", "needle", "ocean",    "orchard", "owl",
    "palace",  "pebble",   "pepper",  "piano",    "pillow", "planet",   "pocket",  "pond",
    "quarry",  "rabbit",   "river",   "saddle",   "shadow", "shell",    "signal",  "spider",
    "spoon",   "squirrel", "station", "stone",    "summer", "sword",    "temple",  "thunder",
    "tiger",   "tower",    "trumpet", "tunnel",   "valley", "violin",   "wagon",   "whistle",
    "window",  "winter",   "wolf"};

// The sizes of tasks.py's lists: a key's words are drawn uniformly from exactly these.
static_assert(std::size(kAdjectives) == 94 && std::size(kNouns) == 99);

// A piece of the prompt and what comes before it: '\0' (the start), ' ' or '\n'.
struct Segment {
  std::string text;
  char sep = ' ';
};

// What a task puts around its filler; the filler's unit k comes from `unit`.
struct Layout {
  std::vector<Segment> head, needles, tail;
  std::vector<double> depths;  // one per needle
  std::function<Segment(size_t)> unit;
};

uint64_t mix(uint64_t h, uint64_t v) { return SplitMix64(h ^ v).next(); }

std::string digits(SplitMix64& rng, int n) {
  uint64_t low = 1;
  for (int i = 1; i < n; ++i) low *= 10;
  return std::to_string(low + rng.below(9 * low));
}

std::string key_name(SplitMix64& rng) {
  const std::string_view adjective = kAdjectives[rng.below(std::size(kAdjectives))];
  const std::string_view noun = kNouns[rng.below(std::size(kNouns))];
  return std::string(adjective) + "-" + std::string(noun);
}

std::string var_name(SplitMix64& rng) {
  std::string name;
  for (int i = 0; i < 5; ++i) name += static_cast<char>('A' + rng.below(26));
  return name;
}

// The grass/sky filler from a random sentence on; the first unit on a new line after the intro
// (tasks.py's _first_on_new_line).
std::function<Segment(size_t)> garbage_units(SplitMix64& rng) {
  const size_t start = rng.below(std::size(kGarbage));
  return [start](size_t k) {
    return Segment{std::string(kGarbage[(start + k) % std::size(kGarbage)]), k == 0 ? '\n' : ' '};
  };
}

// The text of the filler and needles in order: needles at round(depth * units), inserted from
// the deepest down (of two at one index, the shallower first), as tasks.py's assemble().
std::string join(const Layout& layout, size_t units) {
  std::vector<Segment> body;
  for (size_t k = 0; k < units; ++k) body.push_back(layout.unit(k));
  std::vector<std::pair<size_t, size_t>> placed;  // (index, needle)
  for (size_t i = 0; i < layout.needles.size(); ++i) {
    // nearbyint rounds half to even in the default rounding mode, as Python's round().
    placed.emplace_back(static_cast<size_t>(std::nearbyint(layout.depths[i] * units)), i);
  }
  std::stable_sort(placed.begin(), placed.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return layout.depths[a.second] > layout.depths[b.second];
  });
  for (const auto& [index, i] : placed) {
    body.insert(body.begin() + static_cast<std::ptrdiff_t>(index), layout.needles[i]);
  }
  std::string text;
  auto append = [&text](const std::vector<Segment>& segments) {
    for (const Segment& s : segments) {
      if (s.sep != '\0') text += s.sep;
      text += s.text;
    }
  };
  append(layout.head);
  append(body);
  append(layout.tail);
  const size_t first = text.find_first_not_of("\n ");
  return first == std::string::npos ? std::string() : text.substr(first);
}

// Fills the budget with whole units by their counted tokens, then checks the whole prompt's
// count and drops units from the end while it is over (a tokenizer that merges across pieces).
Result<std::pair<std::string, int>> assemble(PieceCounter& counter, const Layout& layout,
                                             int length) {
  int fixed = 1;  // BOS
  for (const auto* part : {&layout.head, &layout.needles, &layout.tail}) {
    for (const Segment& s : *part) fixed += counter.count(s.text, s.sep);
  }
  if (fixed > length) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a case of this task needs at least " + std::to_string(fixed) + " tokens, " +
                          std::to_string(length) + " asked: give a longer length");
  }
  std::vector<int> unit_tokens;
  int used = 0;
  for (size_t k = 0;; ++k) {
    const Segment s = layout.unit(k);
    const int n = std::max(1, counter.count(s.text, s.sep));
    if (fixed + used + n > length) break;
    unit_tokens.push_back(n);
    used += n;
  }
  size_t units = unit_tokens.size();
  std::string prompt = join(layout, units);
  int tokens = counter.count_prompt(prompt);
  while (tokens > length && units > 0) {
    for (int dropped = 0; dropped < tokens - length && units > 0;) dropped += unit_tokens[--units];
    prompt = join(layout, units);
    tokens = counter.count_prompt(prompt);
  }
  if (tokens > length) {
    return make_error(ErrorCode::kInvalidArgument, "the prompt without filler has " +
                                                       std::to_string(tokens) + " tokens, over " +
                                                       std::to_string(length));
  }
  return std::make_pair(std::move(prompt), tokens);
}

Layout passkey(SplitMix64& rng, double depth, std::string& answer) {
  const std::string key = std::to_string(1 + rng.below(50000));
  answer = key;
  Layout l;
  l.head = {{std::string(kPasskeyIntro), '\0'}};
  l.needles = {{"The pass key is " + key + ". Remember it. " + key + " is the pass key.", '\n'}};
  l.depths = {depth};
  l.tail = {{std::string(kPasskeyQuestion), '\n'}};
  l.unit = garbage_units(rng);
  return l;
}

Layout multikey(SplitMix64& rng, double depth, const std::vector<std::string>& haystack,
                std::string& answer) {
  std::vector<std::string> keys;
  while (keys.size() < kMultikeyKeys) {
    std::string k = key_name(rng);
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(std::move(k));
  }
  std::vector<std::string> values;
  for (size_t i = 0; i < keys.size(); ++i) values.push_back(digits(rng, 7));
  Layout l;
  for (size_t i = 0; i < keys.size(); ++i) {
    l.needles.push_back(
        {"One of the special magic numbers for " + keys[i] + " is: " + values[i] + ".", '\n'});
    l.depths.push_back(i == 0 ? depth : rng.unit());
  }
  const std::string& q = keys[0];
  answer = values[0];
  l.head = {{std::string(kMultikeyIntro), '\0'}};
  l.tail = {{"What is the special magic number for " + q +
                 " mentioned in the provided text? The special magic number for " + q +
                 " mentioned in the provided text is",
             '\n'}};
  const size_t start = rng.below(haystack.size());
  l.unit = [&haystack, start](size_t k) {
    return Segment{haystack[(start + k) % haystack.size()], '\n'};
  };
  return l;
}

Layout variable_tracking(SplitMix64& rng, double depth, std::string& answer) {
  std::vector<std::string> names;
  while (names.size() < kVtHops + 1) {
    std::string v = var_name(rng);
    if (std::find(names.begin(), names.end(), v) == names.end()) names.push_back(std::move(v));
  }
  const std::string value = digits(rng, 5);
  Layout l;
  l.needles.push_back({"VAR " + names[0] + " = " + value + ".", ' '});
  for (int i = 0; i < kVtHops; ++i) {
    l.needles.push_back({"VAR " + names[i + 1] + " = VAR " + names[i] + ".", ' '});
  }
  // The first assignment at the given depth, the hops after it at random depths, in order.
  std::vector<double> rest;
  for (int i = 0; i < kVtHops; ++i) rest.push_back(depth + (1 - depth) * rng.unit());
  std::sort(rest.begin(), rest.end());
  l.depths = {depth};
  l.depths.insert(l.depths.end(), rest.begin(), rest.end());
  l.head = {{std::string(kVtIntro), '\0'}};
  const std::string hops = std::to_string(kVtHops + 1);
  l.tail = {{"Question: Find all variables that are assigned the value " + value +
                 " in the text above. Answer: According to the chain(s) of variable assignment "
                 "in the text above, " +
                 hops + " variables are assigned the value " + value + ", they are:",
             '\n'}};
  l.unit = garbage_units(rng);
  for (const std::string& n : names) answer += (answer.empty() ? "" : " ") + n;
  return l;
}

}  // namespace

const char* long_task_name(LongTask task) {
  switch (task) {
    case LongTask::kPasskey:
      return "passkey";
    case LongTask::kMultikey:
      return "multikey";
    case LongTask::kVt:
      return "vt";
  }
  return "?";
}

std::optional<LongTask> parse_long_task(std::string_view name) {
  for (LongTask t : {LongTask::kPasskey, LongTask::kMultikey, LongTask::kVt}) {
    if (name == long_task_name(t)) return t;
  }
  return std::nullopt;
}

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t n) {
  // The largest multiple of n that fits in 2^64, as 2^64 - (2^64 mod n); draws past it are
  // redrawn so that every residue is equally likely.
  const uint64_t limit = -(-n % n);  // 0 means 2^64 (n divides 2^64)
  for (;;) {
    const uint64_t x = next();
    if (limit == 0 || x < limit) return x % n;
  }
}

double SplitMix64::unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t case_seed(uint64_t seed, LongTask task, int length, double depth, int sample) {
  uint64_t h = mix(0x5eed5eed5eed5eedULL, seed);
  h = mix(h, static_cast<uint64_t>(task));
  h = mix(h, static_cast<uint64_t>(length));
  h = mix(h, static_cast<uint64_t>(std::llround(depth * 1e6)));
  return mix(h, static_cast<uint64_t>(sample));
}

PieceCounter::PieceCounter(TokenizeFn tokenize) : tokenize_(std::move(tokenize)) {
  anchor_tokens_ = static_cast<int>(tokenize_(".", false).size());
}

int PieceCounter::count(std::string_view text, char sep) {
  std::string key(1, sep);
  key += text;
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const int n = sep == '\0' ? static_cast<int>(tokenize_(text, false).size())
                            : static_cast<int>(tokenize_("." + key, false).size()) - anchor_tokens_;
  // Filler sentences repeat; haystack lines mostly do not, so the cache stays bounded.
  if (cache_.size() < 100000 && text.size() < 200) cache_.emplace(std::move(key), n);
  return n;
}

int PieceCounter::count_prompt(std::string_view prompt) const {
  return static_cast<int>(tokenize_(prompt, true).size());
}

Result<std::vector<std::string>> read_haystack(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot open the haystack " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t\v\f") != std::string::npos) lines.push_back(std::move(line));
  }
  if (lines.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "the haystack " + path + " has no text lines");
  }
  return lines;
}

Result<TaskCase> make_task_case(const CaseSpec& spec, PieceCounter& counter,
                                const std::vector<std::string>* haystack) {
  SplitMix64 rng(case_seed(spec.seed, spec.task, spec.length, spec.depth, spec.sample));
  TaskCase c;
  c.task = spec.task;
  c.length = spec.length;
  c.depth = spec.depth;
  c.sample = spec.sample;
  Layout layout;
  switch (spec.task) {
    case LongTask::kPasskey:
      layout = passkey(rng, spec.depth, c.answer);
      break;
    case LongTask::kMultikey:
      if (haystack == nullptr || haystack->empty()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "multikey hides its needles in lines of real text: pass --haystack "
                          "FILE (e.g. models/testbed/validation.txt)");
      }
      layout = multikey(rng, spec.depth, *haystack, c.answer);
      break;
    case LongTask::kVt:
      layout = variable_tracking(rng, spec.depth, c.answer);
      break;
  }
  STRATA_ASSIGN_OR_RETURN(auto assembled, assemble(counter, layout, spec.length));
  c.prompt = std::move(assembled.first);
  c.tokens = assembled.second;
  c.answer_tokens = counter.count(c.answer, ' ');
  return c;
}

}  // namespace strata::bench
