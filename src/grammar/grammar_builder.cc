// parse_gbnf: GBNF text -> validated byte-level Grammar.
//   1. gbnf::parse (syntax, repetition expansion);
//   2. character classes -> byte sets, or helper rules of UTF-8 byte-range sequences;
//   3. checks: undefined rules, root, unmatchable rules (no finite derivation), left recursion;
//   4. small non-recursive rules inlined into their users, so that fewer token walks leave the
//      rule they start in (which is what makes a token's fate depend on the stack below);
//   5. the rules reachable from root laid out in one element array.
#include <algorithm>
#include <map>
#include <utility>

#include "grammar/compile_meter.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar.h"
#include "grammar/utf8_ranges.h"

namespace strata::grammar {
namespace {

struct Symbol {
  bool is_rule = false;
  uint32_t id = 0;  // byte set id or rule id
};
using Alternative = std::vector<Symbol>;
struct ByteRule {
  std::vector<Alternative> alternatives;
  uint32_t origin = 0;  // the written rule, for messages
};

// Inlining budgets: a rule is copied into its users when it is this small, and a user grows
// to at most kMaxHostSymbols symbols. A one-character rule of a JSON string (40-odd escape
// alternatives) must fit: left a rule of its own, it ends after every character, so nearly
// every token would be left to the mask-time check (masks of 100 ms on a 102K vocabulary).
constexpr size_t kMaxInlineAlternatives = 64;
constexpr size_t kMaxInlineSymbols = 256;
constexpr size_t kMaxHostSymbols = 512;

class Builder {
 public:
  Builder(std::string_view text, gbnf::ParsedGrammar parsed, CompileMeter* meter)
      : text_(text), parsed_(std::move(parsed)), meter_(meter) {}

  Result<std::shared_ptr<const Grammar>> build(std::string_view root_name) {
    const auto& rules = parsed_.rules;
    for (const auto& rule : rules) {
      if (!rule.defined) {
        return error(rule.used_at, "undefined rule '" + rule.name + "'");
      }
    }
    uint32_t root = UINT32_MAX;
    for (uint32_t i = 0; i < rules.size(); ++i) {
      if (!rules[i].generated && rules[i].name == root_name) root = i;
    }
    if (root == UINT32_MAX) {
      return make_error(ErrorCode::kInvalidArgument, "GBNF: no rule named '" +
                                                         std::string(root_name) +
                                                         "' (the start rule); define it as `" +
                                                         std::string(root_name) + " ::= ...`");
    }
    byte_rules_.resize(rules.size());
    for (uint32_t r = 0; r < rules.size(); ++r) {
      byte_rules_[r].origin = rules[r].origin;
      current_origin_ = rules[r].origin;
      const bool unique_array =
          !rules[r].generated && rules[r].name.starts_with(kUniqueArrayRulePrefix);
      for (const auto& seq : rules[r].alternatives) {
        Alternative alt;
        size_t first = 0;
        if (unique_array) {
          if (seq.empty() || !opens_array(seq[0])) {
            return error(rules[r].defined_at, "rule '" + rules[r].name + "' (a " +
                                                  std::string(kUniqueArrayRulePrefix) +
                                                  " rule) must start every alternative with \"[\"");
          }
          alt.push_back({false, unique_array_open_id()});
          first = 1;
        }
        for (size_t i = first; i < seq.size(); ++i) append_item(seq[i], &alt);
        STRATA_RETURN_IF_ERROR(charge(1 + alt.size()));
        byte_rules_[r].alternatives.push_back(std::move(alt));
      }
    }
    STRATA_RETURN_IF_ERROR(check_productive());
    STRATA_RETURN_IF_ERROR(check_left_recursion());
    STRATA_RETURN_IF_ERROR(charge(byte_rules_.size()));
    inline_small_rules();
    const uint32_t merged_root = merge_equal_rules(root);
    STRATA_RETURN_IF_ERROR(charge(byte_rules_.size()));
    return layout(merged_root);
  }

 private:
  Error error(size_t offset, const std::string& message) const {
    return make_error(ErrorCode::kInvalidArgument,
                      "GBNF " + gbnf::location(text_, offset) + ": " + message);
  }
  Error rule_error(uint32_t rule, const std::string& what) const {
    const auto& origin = parsed_.rules[byte_rules_[rule].origin];
    return error(origin.defined_at, "rule '" + origin.name + "' " + what);
  }

  uint32_t byte_set_id(const ByteSet& set) {
    auto [it, inserted] = byte_set_ids_.emplace(set.bits, static_cast<uint32_t>(sets_.size()));
    if (inserted) sets_.push_back(set);
    return it->second;
  }
  static bool opens_array(const gbnf::Item& item) {
    return item.kind == gbnf::Item::Kind::kChars && !item.negated && item.ranges.size() == 1 &&
           item.ranges[0].first == '[' && item.ranges[0].last == '[';
  }
  // Not shared with the plain "[" (byte_set_id would merge them): the id is the mark.
  uint32_t unique_array_open_id() {
    if (unique_array_open_ == Grammar::kNone) {
      ByteSet set;
      set.set('[');
      unique_array_open_ = static_cast<uint32_t>(sets_.size());
      sets_.push_back(set);
    }
    return unique_array_open_;
  }
  uint32_t byte_range_set(uint8_t first, uint8_t last) {
    ByteSet set;
    for (unsigned b = first; b <= last; ++b) set.set(static_cast<uint8_t>(b));
    return byte_set_id(set);
  }

  void append_item(const gbnf::Item& item, Alternative* alt) {
    if (item.kind == gbnf::Item::Kind::kRule) {
      alt->push_back({true, item.rule});
      return;
    }
    const std::vector<gbnf::CodepointRange> ranges = normalize(item);
    if (ranges.empty()) {
      alt->push_back({false, byte_set_id(ByteSet{})});  // matches nothing
    } else if (ranges.size() == 1 && ranges[0].first == ranges[0].last) {
      for (char c : utf8_encode(ranges[0].first)) {
        const auto b = static_cast<uint8_t>(c);
        alt->push_back({false, byte_range_set(b, b)});
      }
    } else if (ranges.back().last < 0x80) {
      ByteSet set;
      for (const auto& r : ranges) {
        for (uint32_t cp = r.first; cp <= r.last; ++cp) set.set(static_cast<uint8_t>(cp));
      }
      alt->push_back({false, byte_set_id(set)});
    } else {
      alt->push_back({true, class_rule(ranges)});
    }
  }

  // Sorted, merged, complemented when negated, without surrogates (not encodable in UTF-8).
  static std::vector<gbnf::CodepointRange> normalize(const gbnf::Item& item) {
    std::vector<gbnf::CodepointRange> r = item.ranges;
    std::sort(r.begin(), r.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::vector<gbnf::CodepointRange> merged;
    for (const auto& x : r) {
      if (!merged.empty() && x.first <= merged.back().last + 1) {
        merged.back().last = std::max(merged.back().last, x.last);
      } else {
        merged.push_back(x);
      }
    }
    if (item.negated) {
      std::vector<gbnf::CodepointRange> complement;
      uint32_t next = 0;
      for (const auto& x : merged) {
        if (x.first > next) complement.push_back({next, x.first - 1});
        next = x.last + 1;
      }
      if (next <= 0x10FFFF) complement.push_back({next, 0x10FFFF});
      merged = std::move(complement);
    }
    std::vector<gbnf::CodepointRange> out;
    for (const auto& x : merged) {
      if (x.last < 0xD800 || x.first > 0xDFFF) {
        out.push_back(x);
        continue;
      }
      if (x.first < 0xD800) out.push_back({x.first, 0xD7FF});
      if (x.last > 0xDFFF) out.push_back({0xE000, x.last});
    }
    return out;
  }

  // A helper rule whose alternatives are the UTF-8 byte-range sequences of a class.
  uint32_t class_rule(const std::vector<gbnf::CodepointRange>& ranges) {
    std::vector<uint64_t> key;
    key.reserve(ranges.size());
    for (const auto& r : ranges) key.push_back(uint64_t{r.first} << 32 | r.last);
    auto it = class_rules_.find(key);
    if (it != class_rules_.end()) return it->second;
    std::vector<ByteRangeSequence> seqs;
    for (const auto& r : ranges) utf8_sequences(r.first, r.last, &seqs);
    ByteRule rule;
    ByteSet ascii;
    for (const auto& seq : seqs) {
      if (seq.size() == 1) {
        for (unsigned b = seq[0].first; b <= seq[0].last; ++b) ascii.set(static_cast<uint8_t>(b));
        continue;
      }
      Alternative alt;
      for (const auto& br : seq) alt.push_back({false, byte_range_set(br.first, br.last)});
      rule.alternatives.push_back(std::move(alt));
    }
    if (!ascii.empty())
      rule.alternatives.insert(rule.alternatives.begin(), {{false, byte_set_id(ascii)}});
    const auto id = static_cast<uint32_t>(byte_rules_.size());
    rule.origin = current_origin_;  // for messages only
    byte_rules_.push_back(std::move(rule));
    class_rules_.emplace(std::move(key), id);
    return id;
  }

  bool symbol_productive(const Symbol& s, const std::vector<bool>& productive) const {
    return s.is_rule ? productive[s.id] : !sets_[s.id].empty();
  }

  // The least set of rules that have an alternative made only of byte symbols `bytes_ok` admits
  // and rules of the set. Each alternative counts its references to rules not yet in the set; a
  // rule joining the set decrements the counts of the alternatives that refer to it, and an
  // alternative reaching zero brings its rule in. Linear in the grammar, where repeating passes
  // until nothing changes is quadratic on a long chain of rules written callers first.
  template <class BytesOk>
  std::vector<bool> least_rule_set(BytesOk bytes_ok) {
    const size_t n = byte_rules_.size();
    std::vector<bool> in(n, false);
    std::vector<uint32_t> alt_rule, waiting, ready;
    std::vector<std::vector<uint32_t>> users(n);  // rule -> alternatives, once per reference
    for (uint32_t r = 0; r < n; ++r) {
      for (const auto& alt : byte_rules_[r].alternatives) {
        if (!std::all_of(alt.begin(), alt.end(),
                         [&](const Symbol& s) { return s.is_rule || bytes_ok(s); })) {
          continue;  // never in, whatever the rules do
        }
        const auto a = static_cast<uint32_t>(alt_rule.size());
        uint32_t references = 0;
        for (const Symbol& s : alt) {
          if (!s.is_rule) continue;
          ++references;
          users[s.id].push_back(a);
        }
        alt_rule.push_back(r);
        waiting.push_back(references);
        if (references == 0) ready.push_back(r);
      }
    }
    (void)charge(alt_rule.size() + n);
    while (!ready.empty()) {
      const uint32_t r = ready.back();
      ready.pop_back();
      if (in[r]) continue;
      in[r] = true;
      for (uint32_t a : users[r]) {
        if (--waiting[a] == 0) ready.push_back(alt_rule[a]);
      }
    }
    return in;
  }

  // Charges the meter; a failure is sticky and build() returns it at its next check.
  Status charge(uint64_t units) { return meter_ ? meter_->charge(units) : ok_status(); }

  // A rule is productive when some alternative has only productive symbols (least fixpoint);
  // an unproductive rule derives no finite string. Dead alternatives are then dropped.
  Status check_productive() {
    const std::vector<bool> productive =
        least_rule_set([&](const Symbol& s) { return !sets_[s.id].empty(); });
    for (uint32_t r = 0; r < byte_rules_.size(); ++r) {
      if (!productive[r]) return rule_error(r, "cannot match any finite string (unmatchable)");
    }
    for (auto& rule : byte_rules_) {
      std::erase_if(rule.alternatives, [&](const Alternative& alt) {
        return !std::all_of(alt.begin(), alt.end(),
                            [&](const Symbol& s) { return symbol_productive(s, productive); });
      });
    }
    return ok_status();
  }

  // Left recursion: a rule reaching itself through references at nullable prefixes. Only cycles
  // with a reference that is not the last symbol of its alternative grow the parse stack (the
  // matcher returns from a last-symbol reference straight to the caller), so only those are
  // errors; a cycle of last-symbol references (r ::= s | "x", s ::= r) is harmless.
  Status check_left_recursion() {
    const size_t n = byte_rules_.size();
    const std::vector<bool> nullable = least_rule_set([](const Symbol&) { return false; });
    struct Edge {
      uint32_t to;
      bool tail;
    };
    std::vector<std::vector<Edge>> edges(n);
    for (size_t r = 0; r < n; ++r) {
      for (const auto& alt : byte_rules_[r].alternatives) {
        for (size_t i = 0; i < alt.size(); ++i) {
          if (!alt[i].is_rule) break;
          edges[r].push_back({alt[i].id, i + 1 == alt.size()});
          if (!nullable[alt[i].id]) break;
        }
      }
    }
    scc_ = strongly_connected_components(edges);
    for (uint32_t r = 0; r < n; ++r) {
      for (const Edge& e : edges[r]) {
        if (!e.tail && scc_[r] == scc_[e.to]) {
          return rule_error(r, "is left-recursive: it can reach itself without consuming input");
        }
      }
    }
    return ok_status();
  }

  // Tarjan's algorithm without recursion (grammars may nest deeply). Component ids come out in
  // reverse topological order: a component's successors get smaller ids.
  template <class EdgeList>
  static std::vector<uint32_t> strongly_connected_components(const EdgeList& edges) {
    const size_t n = edges.size();
    constexpr uint32_t kUnvisited = UINT32_MAX;
    std::vector<uint32_t> index(n, kUnvisited), low(n, 0), component(n, kUnvisited);
    std::vector<uint32_t> stack;
    std::vector<bool> on_stack(n, false);
    std::vector<std::pair<uint32_t, size_t>> calls;  // (node, next edge)
    uint32_t counter = 0, n_components = 0;
    for (uint32_t start = 0; start < n; ++start) {
      if (index[start] != kUnvisited) continue;
      calls.push_back({start, 0});
      while (!calls.empty()) {
        auto& [v, next] = calls.back();
        if (next == 0 && index[v] == kUnvisited) {
          index[v] = low[v] = counter++;
          stack.push_back(v);
          on_stack[v] = true;
        }
        if (next < edges[v].size()) {
          const uint32_t w = edges[v][next++].to;
          if (index[w] == kUnvisited) {
            calls.push_back({w, 0});
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], index[w]);
          }
          continue;
        }
        if (low[v] == index[v]) {
          uint32_t w;
          do {
            w = stack.back();
            stack.pop_back();
            on_stack[w] = false;
            component[w] = n_components;
          } while (w != v);
          ++n_components;
        }
        const uint32_t finished = v;
        calls.pop_back();
        if (!calls.empty()) {
          const uint32_t parent = calls.back().first;
          low[parent] = std::min(low[parent], low[finished]);
        }
      }
    }
    return component;
  }

  static size_t n_symbols(const ByteRule& rule) {
    size_t n = 0;
    for (const auto& alt : rule.alternatives) n += alt.size();
    return n;
  }

  // Rules are visited callees first (ascending component id), so what is inlined is final.
  void inline_small_rules() {
    const size_t n = byte_rules_.size();
    std::vector<bool> recursive(n, false);
    std::vector<size_t> component_size(n, 0);
    for (size_t r = 0; r < n; ++r) ++component_size[scc_[r]];
    for (size_t r = 0; r < n; ++r) {
      recursive[r] = component_size[scc_[r]] > 1;
      for (const auto& alt : byte_rules_[r].alternatives) {
        for (const auto& s : alt) recursive[r] = recursive[r] || (s.is_rule && s.id == r);
      }
    }
    std::vector<uint32_t> order(n);
    for (uint32_t r = 0; r < n; ++r) order[r] = r;
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return scc_[a] < scc_[b]; });
    auto inlinable = [&](const Symbol& s) {
      if (!s.is_rule || recursive[s.id]) return false;
      const ByteRule& callee = byte_rules_[s.id];
      return callee.alternatives.size() <= kMaxInlineAlternatives &&
             n_symbols(callee) <= kMaxInlineSymbols;
    };
    for (uint32_t r : order) {
      ByteRule& host = byte_rules_[r];
      std::vector<Alternative> done;
      std::vector<std::pair<Alternative, size_t>> work;  // (alternative, first index to scan)
      for (auto& alt : host.alternatives) work.push_back({std::move(alt), 0});
      size_t total = n_symbols(host);
      while (!work.empty()) {
        auto [alt, from] = std::move(work.back());
        work.pop_back();
        // Only a leading reference is inlined: one further in would copy the symbols before
        // it into every new alternative, and the parse would then carry one stack per copy
        // through that shared prefix (multiplying with each nesting level).
        const size_t i = from;
        if (i != 0 || alt.empty() || !inlinable(alt[0])) {
          done.push_back(std::move(alt));
          continue;
        }
        const ByteRule& callee = byte_rules_[alt[i].id];
        const size_t grown = callee.alternatives.size() * (alt.size() - 1) + n_symbols(callee);
        if (total + grown > kMaxHostSymbols) {
          done.push_back(std::move(alt));
          continue;
        }
        total += grown - alt.size();
        for (auto it = callee.alternatives.rbegin(); it != callee.alternatives.rend(); ++it) {
          Alternative copy(alt.begin(), alt.begin() + static_cast<std::ptrdiff_t>(i));
          copy.insert(copy.end(), it->begin(), it->end());
          copy.insert(copy.end(), alt.begin() + static_cast<std::ptrdiff_t>(i) + 1, alt.end());
          // A callee alternative that is empty exposes the next symbol as the new lead.
          work.push_back({std::move(copy), it->empty() ? 0 : 1});
        }
      }
      std::reverse(done.begin(), done.end());
      host.alternatives = std::move(done);
    }
  }

  // Rules that derive the same byte strings by the same structure become one. Generated grammars
  // repeat themselves (every `char*` of a JSON Schema's key automaton is its own rule), and each
  // copy would otherwise cost the compiled grammar walks of the vocabulary. Components of the
  // graph of all references are visited callees first, so a rule's signature (its alternatives
  // symbol by symbol, references by their callees' ids) is final when read: equal signatures, equal
  // rules. A rule that calls itself reads as SELF; inside a larger cycle, rules are told apart
  // by partition refinement (the coarsest split where equal rules reference equal classes) and
  // keep ids of their own. Returns the root's representative; references are rewritten.
  uint32_t merge_equal_rules(uint32_t root) {
    const size_t n = byte_rules_.size();
    constexpr uint32_t kSeparator = UINT32_MAX, kSelf = UINT32_MAX - 1;
    struct Edge {
      uint32_t to;
    };
    std::vector<std::vector<Edge>> edges(n);  // every reference, not only leading ones
    for (uint32_t r = 0; r < n; ++r) {
      for (const auto& alt : byte_rules_[r].alternatives) {
        for (const auto& s : alt) {
          if (s.is_rule) edges[r].push_back({s.id});
        }
      }
    }
    const std::vector<uint32_t> component = strongly_connected_components(edges);
    std::vector<uint32_t> order(n);
    for (uint32_t r = 0; r < n; ++r) order[r] = r;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return component[a] < component[b]; });
    std::map<std::vector<uint32_t>, uint32_t> ids;  // signature -> representative rule
    std::vector<uint32_t> representative(n, UINT32_MAX);
    // A rule's signature: its symbols' words, byte sets and settled references by id, with
    // `inside` giving the word of a reference not settled yet (inside the current component).
    auto signature = [&](uint32_t r, auto&& inside) {
      std::vector<uint32_t> words;
      for (const auto& alt : byte_rules_[r].alternatives) {
        for (const auto& s : alt) {
          if (!s.is_rule) {
            words.push_back(2 * s.id);
          } else if (representative[s.id] != UINT32_MAX) {
            words.push_back(2 * representative[s.id] + 1);
          } else {
            words.push_back(inside(s.id));
          }
        }
        words.push_back(kSeparator);
      }
      return words;
    };
    for (size_t begin = 0; begin < n;) {
      size_t end = begin + 1;
      while (end < n && component[order[end]] == component[order[begin]]) ++end;
      if (end - begin == 1) {
        const uint32_t r = order[begin];
        std::vector<uint32_t> words = signature(r, [](uint32_t) { return kSelf; });
        representative[r] = ids.emplace(std::move(words), r).first->second;
      } else {
        // Refinement inside the component; the old class leads the signature, so classes only
        // split, and a round that splits nothing is the fixpoint.
        std::map<uint32_t, uint32_t> cls;
        for (size_t i = begin; i < end; ++i) cls[order[i]] = 0;
        for (size_t n_classes = 1;;) {
          std::map<std::vector<uint32_t>, uint32_t> by_signature;
          std::map<uint32_t, uint32_t> next;
          for (size_t i = begin; i < end; ++i) {
            const uint32_t r = order[i];
            std::vector<uint32_t> words{cls[r]};
            const std::vector<uint32_t> body =
                signature(r, [&](uint32_t callee) { return kSelf - 1 - cls[callee]; });
            words.insert(words.end(), body.begin(), body.end());
            next[r] = by_signature.emplace(std::move(words), by_signature.size()).first->second;
          }
          cls.swap(next);
          // Rounds can number up to the component's size (a long cycle of rules that differ at
          // one end); the meter bounds what such a grammar costs.
          (void)charge(end - begin);
          if (by_signature.size() == n_classes) break;
          n_classes = by_signature.size();
        }
        std::map<uint32_t, uint32_t> first_of_class;
        for (size_t i = begin; i < end; ++i) first_of_class.emplace(cls[order[i]], order[i]);
        for (size_t i = begin; i < end; ++i) {
          representative[order[i]] = first_of_class[cls[order[i]]];
        }
      }
      begin = end;
    }
    for (auto& rule : byte_rules_) {
      for (auto& alt : rule.alternatives) {
        for (auto& s : alt) {
          if (s.is_rule) s.id = representative[s.id];
        }
      }
    }
    return representative[root];
  }

  std::shared_ptr<const Grammar> layout(uint32_t root) {
    const size_t n = byte_rules_.size();
    std::vector<uint32_t> new_id(n, UINT32_MAX);
    std::vector<uint32_t> order{root};
    new_id[root] = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      for (const auto& alt : byte_rules_[order[k]].alternatives) {
        for (const auto& s : alt) {
          if (s.is_rule && new_id[s.id] == UINT32_MAX) {
            new_id[s.id] = static_cast<uint32_t>(order.size());
            order.push_back(s.id);
          }
        }
      }
    }
    std::vector<GrammarRule> rules(order.size());
    std::vector<Element> elements;
    for (size_t k = 0; k < order.size(); ++k) {
      const uint32_t r = order[k];
      const auto& parsed = parsed_.rules[r < parsed_.rules.size() ? r : byte_rules_[r].origin];
      rules[k].name =
          r < parsed_.rules.size() ? parsed.name : parsed.name + "_class" + std::to_string(r);
      for (const auto& alt : byte_rules_[r].alternatives) {
        rules[k].alternatives.push_back(static_cast<uint32_t>(elements.size()));
        for (const auto& s : alt) {
          elements.push_back(s.is_rule ? Element{ElementKind::kRule, new_id[s.id]}
                                       : Element{ElementKind::kBytes, s.id});
        }
        elements.push_back(Element{ElementKind::kEnd, 0});
      }
    }
    return std::make_shared<const Grammar>(std::move(rules), std::move(elements), std::move(sets_),
                                           0, unique_array_open_);
  }

  std::string_view text_;
  gbnf::ParsedGrammar parsed_;
  std::vector<ByteRule> byte_rules_;
  std::vector<ByteSet> sets_;
  std::map<std::array<uint64_t, 4>, uint32_t> byte_set_ids_;
  std::map<std::vector<uint64_t>, uint32_t> class_rules_;
  std::vector<uint32_t> scc_;
  uint32_t current_origin_ = 0;
  uint32_t unique_array_open_ = Grammar::kNone;
  CompileMeter* meter_;
};

}  // namespace

Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view text, std::string_view root,
                                                  CompileMeter* meter) {
  if (meter) STRATA_RETURN_IF_ERROR(meter->charge(1 + text.size() / 64));
  STRATA_ASSIGN_OR_RETURN(gbnf::ParsedGrammar parsed, gbnf::parse(text));
  auto built = Builder(text, std::move(parsed), meter).build(root);
  // A spent budget wins over the result: refinement rounds charge without stopping.
  if (meter) STRATA_RETURN_IF_ERROR(meter->status());
  return built;
}

}  // namespace strata::grammar
