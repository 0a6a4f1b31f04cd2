#include "grammar/gbnf_parser.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::grammar::gbnf {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<ParsedGrammar> run() {
    skip_space(true);
    while (pos_ < text_.size()) {
      STRATA_RETURN_IF_ERROR(parse_rule());
      skip_space(true);
    }
    return std::move(grammar_);
  }

 private:
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool at_end() const { return pos_ >= text_.size(); }

  Error error_at(size_t offset, const std::string& message) const {
    return make_error(ErrorCode::kInvalidArgument,
                      "GBNF " + location(text_, offset) + ": " + message);
  }

  // Spaces, tabs and # comments; newlines too where a rule may continue (inside parentheses,
  // after `|` or `::=`).
  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\r' && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  uint32_t rule_id(std::string_view name, size_t offset) {
    auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(grammar_.rules.size());
    Rule rule;
    rule.name = std::string(name);
    rule.origin = id;
    rule.used_at = offset;
    grammar_.rules.push_back(std::move(rule));
    ids_.emplace(std::string(name), id);
    return id;
  }

  uint32_t new_rule(uint32_t owner) {
    const auto id = static_cast<uint32_t>(grammar_.rules.size());
    Rule rule;
    rule.name = grammar_.rules[owner].name + "_" + std::to_string(id);
    rule.origin = grammar_.rules[owner].origin;
    rule.generated = true;
    rule.defined = true;
    rule.defined_at = grammar_.rules[owner].defined_at;
    grammar_.rules.push_back(std::move(rule));
    return id;
  }

  Status count_items(size_t n) {
    items_ += n;
    if (items_ > kMaxItems) {
      return error_at(pos_, "grammar too large after expanding repetitions (more than " +
                                std::to_string(kMaxItems) + " items)");
    }
    return ok_status();
  }

  Status parse_rule() {
    const size_t start = pos_;
    while (is_word_char(peek())) ++pos_;
    if (pos_ == start) return error_at(pos_, "expected a rule name");
    const std::string_view name = text_.substr(start, pos_ - start);
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") return error_at(pos_, "expected '::=' after rule name");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name, start);
    if (grammar_.rules[id].defined) {
      return error_at(start, "rule '" + std::string(name) + "' is defined twice");
    }
    grammar_.rules[id].defined = true;
    grammar_.rules[id].defined_at = start;
    STRATA_ASSIGN_OR_RETURN(auto alternatives, parse_alternatives(id, /*nested=*/false, 0));
    grammar_.rules[id].alternatives = std::move(alternatives);
    if (peek() == '\r') ++pos_;
    if (peek() == '\n') {
      ++pos_;
    } else if (!at_end()) {
      return error_at(pos_, std::string("unexpected '") + peek() + "'");
    }
    return ok_status();
  }

  Result<std::vector<Sequence>> parse_alternatives(uint32_t owner, bool nested, int depth) {
    if (depth > kMaxNesting) return error_at(pos_, "parentheses nested too deeply");
    std::vector<Sequence> alternatives;
    STRATA_ASSIGN_OR_RETURN(Sequence first, parse_sequence(owner, nested, depth));
    alternatives.push_back(std::move(first));
    while (true) {
      // Outside parentheses a newline ends the rule, unless the next line starts with `|`
      // (an extension of llama.cpp's format, where `|` must end the line instead).
      const size_t before = pos_;
      if (!nested) skip_space(true);
      if (peek() != '|') {
        pos_ = before;
        break;
      }
      ++pos_;
      skip_space(true);
      STRATA_ASSIGN_OR_RETURN(Sequence next, parse_sequence(owner, nested, depth));
      alternatives.push_back(std::move(next));
    }
    return alternatives;
  }

  Result<uint32_t> parse_hex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      uint32_t v;
      if (c >= '0' && c <= '9') {
        v = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return error_at(pos_, "expected " + std::to_string(digits) + " hex digits");
      }
      value = value * 16 + v;
      ++pos_;
    }
    if (value > 0x10FFFF) return error_at(pos_, "code point past U+10FFFF");
    return value;
  }

  // One character of a literal or class: an escape or one UTF-8 encoded code point.
  Result<uint32_t> parse_char() {
    if (at_end()) return error_at(pos_, "unexpected end of grammar");
    const auto c = static_cast<unsigned char>(peek());
    if (c == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        case 'n':
          return uint32_t{'\n'};
        case 't':
          return uint32_t{'\t'};
        case 'r':
          return uint32_t{'\r'};
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
          return static_cast<uint32_t>(e);
        default:
          return error_at(pos_ - 2, "unknown escape '\\" + std::string(1, e) + "'");
      }
    }
    const int length = c < 0x80         ? 1
                       : (c >> 5) == 6  ? 2
                       : (c >> 4) == 14 ? 3
                       : (c >> 3) == 30 ? 4
                                        : 0;
    if (length == 0 || pos_ + length > text_.size()) return error_at(pos_, "invalid UTF-8");
    uint32_t value = length == 1 ? c : c & (0x7F >> length);
    for (int i = 1; i < length; ++i) {
      const auto b = static_cast<unsigned char>(text_[pos_ + i]);
      if ((b >> 6) != 2) return error_at(pos_, "invalid UTF-8");
      value = (value << 6) | (b & 0x3F);
    }
    pos_ += length;
    return value;
  }

  Result<uint32_t> parse_int() {
    const size_t start = pos_;
    uint64_t value = 0;
    while (is_digit(peek())) {
      value = value * 10 + static_cast<uint64_t>(peek() - '0');
      if (value > kMaxRepetition) {
        return error_at(
            start, "repetition bound too large (at most " + std::to_string(kMaxRepetition) + ")");
      }
      ++pos_;
    }
    if (pos_ == start) return error_at(pos_, "expected a number");
    return static_cast<uint32_t>(value);
  }

  // Applies x{min,max} (max < 0: unbounded) to the items of `seq` from `start` on.
  Status repeat(Sequence* seq, size_t start, uint32_t owner, uint32_t min, int64_t max) {
    if (start == seq->size()) return error_at(pos_, "repetition operator with nothing before it");
    Sequence unit_items(seq->begin() + static_cast<std::ptrdiff_t>(start), seq->end());
    seq->resize(start);
    Item unit;
    if (unit_items.size() == 1) {
      unit = std::move(unit_items[0]);
    } else {
      const uint32_t group = new_rule(owner);
      grammar_.rules[group].alternatives.push_back(std::move(unit_items));
      unit = rule_item(group);
    }
    const uint64_t n_optional = max < 0 ? 1 : static_cast<uint64_t>(max) - min;
    // Bounded optional copies are rules "at most i more units", the same whatever repeats them:
    // kept per unit, so a string with maxLength 255 and one with 146 end in the same 146 rules
    // (each rule is a grammar position per alternative of the unit, compiled against the
    // vocabulary).
    std::vector<uint32_t>* at_most = max < 0 ? nullptr : &at_most_[unit_key(unit)];
    const uint64_t n_new =
        at_most ? n_optional - std::min<uint64_t>(n_optional, at_most->size()) : n_optional;
    // A character class is copied in place. A rule is not: a copy in the middle of `seq` would
    // be called with a frame below it, and a token that ends one copy and starts the next would
    // leave its rule at every copy (uncertain, checked against the stack below at mask time).
    // Its copies become a chain of rules that each lead with it (the builder inlines a leading
    // call) and end with a tail call to the next, so the whole repetition is one flat frame.
    const bool chain = unit.kind == Item::Kind::kRule;
    STRATA_RETURN_IF_ERROR(count_items((chain ? 2 : 1) * uint64_t{min} + 2 * n_new));
    if (!chain) {
      for (uint32_t i = 0; i < min; ++i) seq->push_back(unit);
    }
    uint32_t ref = 0;  // the rule for what follows the copies made so far
    if (at_most) {
      while (at_most->size() < n_optional) {
        const uint32_t rule = new_rule(owner);
        Sequence body{unit};
        if (!at_most->empty()) body.push_back(rule_item(at_most->back()));
        grammar_.rules[rule].alternatives = {std::move(body), Sequence{}};
        at_most->push_back(rule);
      }
      if (n_optional > 0) ref = (*at_most)[n_optional - 1];
    } else {
      const uint32_t rule = new_rule(owner);  // unit*: rule ::= unit rule | ""
      grammar_.rules[rule].alternatives = {Sequence{unit, rule_item(rule)}, Sequence{}};
      ref = rule;
    }
    bool have_ref = n_optional > 0;
    for (uint32_t i = 0; chain && i < min; ++i) {
      const uint32_t rule = new_rule(owner);
      Sequence body{unit};
      if (have_ref) body.push_back(rule_item(ref));
      grammar_.rules[rule].alternatives = {std::move(body)};
      ref = rule;
      have_ref = true;
    }
    if (have_ref) seq->push_back(rule_item(ref));
    return ok_status();
  }

  Result<Sequence> parse_sequence(uint32_t owner, bool nested, int depth) {
    Sequence seq;
    size_t last_start = 0;  // where the item a repetition applies to begins
    bool have_last = false;
    while (!at_end()) {
      const char c = peek();
      const size_t item_at = pos_;
      if (c == '"') {
        ++pos_;
        last_start = seq.size();
        have_last = true;
        while (peek() != '"') {
          if (at_end()) return error_at(item_at, "unterminated string literal");
          STRATA_ASSIGN_OR_RETURN(uint32_t cp, parse_char());
          Item item;
          item.ranges.push_back({cp, cp});
          seq.push_back(std::move(item));
          STRATA_RETURN_IF_ERROR(count_items(1));
        }
        ++pos_;
        if (seq.size() == last_start) have_last = false;  // "" matches the empty string
      } else if (c == '[') {
        ++pos_;
        Item item;
        if (peek() == '^') {
          item.negated = true;
          ++pos_;
        }
        while (peek() != ']') {
          if (at_end()) return error_at(item_at, "unterminated character class");
          STRATA_ASSIGN_OR_RETURN(uint32_t first, parse_char());
          uint32_t last = first;
          if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
            ++pos_;
            STRATA_ASSIGN_OR_RETURN(last, parse_char());
            if (last < first) return error_at(item_at, "character range out of order");
          }
          item.ranges.push_back({first, last});
        }
        ++pos_;
        last_start = seq.size();
        have_last = true;
        seq.push_back(std::move(item));
        STRATA_RETURN_IF_ERROR(count_items(1));
      } else if (c == '.') {
        ++pos_;
        Item item;
        item.negated = true;
        last_start = seq.size();
        have_last = true;
        seq.push_back(std::move(item));
        STRATA_RETURN_IF_ERROR(count_items(1));
      } else if (is_word_char(c)) {
        const size_t start = pos_;
        while (is_word_char(peek())) ++pos_;
        const uint32_t rule = rule_id(text_.substr(start, pos_ - start), start);
        last_start = seq.size();
        have_last = true;
        seq.push_back(rule_item(rule));
        STRATA_RETURN_IF_ERROR(count_items(1));
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        const uint32_t group = new_rule(owner);
        STRATA_ASSIGN_OR_RETURN(auto alternatives, parse_alternatives(group, true, depth + 1));
        grammar_.rules[group].alternatives = std::move(alternatives);
        if (peek() != ')') return error_at(pos_, "expected ')'");
        ++pos_;
        last_start = seq.size();
        have_last = true;
        seq.push_back(rule_item(group));
        STRATA_RETURN_IF_ERROR(count_items(1));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_last) return error_at(pos_, std::string("'") + c + "' with nothing to repeat");
        ++pos_;
        uint32_t min = 0;
        int64_t max = -1;
        if (c == '+') {
          min = 1;
        } else if (c == '?') {
          max = 1;
        } else if (c == '{') {
          skip_space(nested);
          STRATA_ASSIGN_OR_RETURN(min, parse_int());
          skip_space(nested);
          if (peek() == '}') {
            max = min;
          } else if (peek() == ',') {
            ++pos_;
            skip_space(nested);
            if (is_digit(peek())) {
              STRATA_ASSIGN_OR_RETURN(uint32_t upper, parse_int());
              if (upper < min) return error_at(item_at, "repetition {m,n} with n < m");
              max = upper;
              skip_space(nested);
            }
            if (peek() != '}') return error_at(pos_, "expected '}'");
          } else {
            return error_at(pos_, "expected ',' or '}' in repetition");
          }
          ++pos_;
        }
        STRATA_RETURN_IF_ERROR(repeat(&seq, last_start, owner, min, max));
        have_last = seq.size() > last_start;  // x*? repeats the repetition, as in llama.cpp
      } else {
        break;
      }
      skip_space(nested);
    }
    return seq;
  }

  static Item rule_item(uint32_t rule) {
    Item item;
    item.kind = Item::Kind::kRule;
    item.rule = rule;
    return item;
  }

  // What identifies a repeated unit: its rule, or its character class.
  static std::string unit_key(const Item& unit) {
    if (unit.kind == Item::Kind::kRule) return "r" + std::to_string(unit.rule);
    std::string key = unit.negated ? "^" : "c";
    for (const CodepointRange& r : unit.ranges) {
      key += std::to_string(r.first) + "-" + std::to_string(r.last) + ",";
    }
    return key;
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t items_ = 0;
  ParsedGrammar grammar_;
  std::unordered_map<std::string, uint32_t> ids_;
  // Per repeated unit (unit_key): the rules "at most i + 1 more units", i ascending.
  std::unordered_map<std::string, std::vector<uint32_t>> at_most_;
};

}  // namespace

Result<ParsedGrammar> parse(std::string_view text) { return Parser(text).run(); }

std::string location(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace strata::grammar::gbnf
