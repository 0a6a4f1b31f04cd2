// A GBNF grammar compiled to rules over bytes: character classes over code points become UTF-8
// byte sequences, so a matcher advances one byte at a time and token boundaries never matter.
// Immutable once built; share it between requests and vocabularies.
//
// Layout: all alternatives of all rules live in one element array. An alternative is a run of
// kBytes / kRule elements closed by a kEnd element; a position is an index into that array.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace strata::grammar {

struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool test(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void set(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  bool empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
};

enum class ElementKind : uint8_t { kBytes, kRule, kEnd };

// A rule whose name starts with this (written by the JSON-Schema converter for `uniqueItems`,
// and open to hand-written GBNF) derives a JSON array whose items must be pairwise distinct
// JSON values: each of its alternatives starts with "[", which the builder gives a byte set of
// its own (Grammar::unique_array_open()) so the matcher knows which "[" opens such an array
// (unique_items.h holds the check no grammar can express).
inline constexpr std::string_view kUniqueArrayRulePrefix = "unique-array";

struct Element {
  ElementKind kind = ElementKind::kEnd;
  uint32_t value = 0;  // kBytes: index into byte_sets(); kRule: rule id
};

struct GrammarRule {
  std::string name;
  std::vector<uint32_t> alternatives;  // start positions
};

class Grammar {
 public:
  Grammar(std::vector<GrammarRule> rules, std::vector<Element> elements,
          std::vector<ByteSet> byte_sets, uint32_t root, uint32_t unique_array_open = kNone)
      : rules_(std::move(rules)),
        elements_(std::move(elements)),
        byte_sets_(std::move(byte_sets)),
        root_(root),
        unique_array_open_(unique_array_open) {
    compute_min_rest();
  }

  const std::vector<GrammarRule>& rules() const { return rules_; }
  const std::vector<Element>& elements() const { return elements_; }
  const Element& element(uint32_t pos) const { return elements_[pos]; }
  const ByteSet& byte_set(uint32_t id) const { return byte_sets_[id]; }
  size_t n_byte_sets() const { return byte_sets_.size(); }
  uint32_t root() const { return root_; }
  // The byte set of the "[" that opens a unique-array rule's array (kNone when no rule is one):
  // the same byte as any "[", told apart by its id.
  uint32_t unique_array_open() const { return unique_array_open_; }
  static constexpr uint32_t kNone = UINT32_MAX;
  // The fewest bytes that finish the alternative from `pos` on (the element at pos included):
  // shortest-derivation lengths, saturating at kUnbounded for rules with no finite sentence.
  uint32_t min_rest(uint32_t pos) const { return min_rest_[pos]; }
  // The shortest sentence of a rule (kUnbounded when it has none).
  uint32_t rule_min_length(uint32_t rule) const { return rule_min_length_[rule]; }
  static constexpr uint32_t kUnbounded = UINT32_MAX;
  // The most one choice between a rule's alternatives can add to the shortest completion
  // (longest minus shortest alternative): how far one token may jump away from the end, e.g.
  // by naming the tool whose required arguments are longest.
  uint32_t max_choice_jump() const { return max_choice_jump_; }

  // The rules in GBNF over bytes (\xHH for bytes outside printable ASCII), for debugging.
  std::string to_string() const;

 private:
  void compute_min_rest();

  std::vector<GrammarRule> rules_;
  std::vector<Element> elements_;
  std::vector<ByteSet> byte_sets_;
  uint32_t root_;
  uint32_t unique_array_open_;
  std::vector<uint32_t> min_rest_;         // per element position
  std::vector<uint32_t> rule_min_length_;  // per rule
  uint32_t max_choice_jump_ = 0;
};

class CompileMeter;

// Parses and validates GBNF. Errors name line:column: syntax, undefined rule, missing root rule,
// left recursion (also through rules that can match the empty string), rules that cannot match
// any finite string, repetition bounds or expansions too large, parentheses nested deeper than
// gbnf::kMaxNesting. `meter` (compile_meter.h), when given, is charged for the work and stops it
// past its budget or cap.
Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view text,
                                                  std::string_view root = "root",
                                                  CompileMeter* meter = nullptr);

}  // namespace strata::grammar
