// Deterministic automata over code points for JSON Schema string constraints. See
// regex_to_gbnf_automaton.h.
#include "grammar/regex_to_gbnf_automaton.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

#include "grammar/utf8_ranges.h"

namespace strata::grammar {
namespace {

using regex_detail::CharSet;
using regex_detail::kMaxCodePoint;

constexpr size_t kMaxNfaStates = 60000;

CharSet all_chars() { return regex_detail::range_set(0, kMaxCodePoint); }

// A pattern's syntax tree.
struct Node {
  enum Kind { kSet, kConcat, kAlt, kRepeat, kStart, kEnd } kind = kConcat;
  CharSet set;
  std::vector<size_t> kids;
  int min = 0, max = 0;  // kRepeat; max -1 unbounded
};

class PatternParser {
 public:
  explicit PatternParser(std::string_view pattern) : pattern_(pattern) {}

  Result<size_t> parse() {
    STRATA_ASSIGN_OR_RETURN(size_t root, parse_alternation());
    if (pos_ < pattern_.size()) return error("unbalanced ')'", ErrorCode::kInvalidArgument);
    return root;
  }
  std::vector<Node>& nodes() { return nodes_; }

 private:
  Error error(const std::string& what, ErrorCode code = ErrorCode::kUnsupported) const {
    return make_error(code, "pattern \"" + std::string(pattern_) + "\": " + what +
                                (code == ErrorCode::kUnsupported ? " is not supported" : "") +
                                " (offset " + std::to_string(pos_) + ")");
  }
  size_t add(Node node) {
    nodes_.push_back(std::move(node));
    return nodes_.size() - 1;
  }
  bool starts_with(std::string_view s) const { return pattern_.substr(pos_, s.size()) == s; }

  Result<size_t> parse_alternation() {
    Node alt;
    alt.kind = Node::kAlt;
    while (true) {
      STRATA_ASSIGN_OR_RETURN(size_t seq, parse_sequence());
      alt.kids.push_back(seq);
      if (pos_ >= pattern_.size() || pattern_[pos_] != '|') break;
      ++pos_;
    }
    if (alt.kids.size() == 1) return alt.kids[0];
    return add(std::move(alt));
  }

  Result<size_t> parse_sequence() {
    Node seq;
    seq.kind = Node::kConcat;
    while (pos_ < pattern_.size() && pattern_[pos_] != '|' && pattern_[pos_] != ')') {
      const char c = pattern_[pos_];
      size_t atom = 0;
      if (c == '^' || c == '$') {
        ++pos_;
        Node anchor;
        anchor.kind = c == '^' ? Node::kStart : Node::kEnd;
        seq.kids.push_back(add(std::move(anchor)));
        continue;
      }
      if (c == '(') {
        ++pos_;
        if (starts_with("?:")) {
          pos_ += 2;
        } else if (starts_with("?=") || starts_with("?!") || starts_with("?<=") ||
                   starts_with("?<!")) {
          return error("lookaround");
        } else if (starts_with("?<") || starts_with("?P<")) {
          const size_t close = pattern_.find('>', pos_);
          if (close == std::string_view::npos) {
            return error("unterminated group name", ErrorCode::kInvalidArgument);
          }
          pos_ = close + 1;
        } else if (starts_with("?")) {
          return error("the group modifier (?");
        }
        STRATA_ASSIGN_OR_RETURN(atom, parse_alternation());
        if (pos_ >= pattern_.size() || pattern_[pos_] != ')') {
          return error("unterminated group", ErrorCode::kInvalidArgument);
        }
        ++pos_;
      } else if (c == '*' || c == '+' || c == '?') {
        return error("nothing to repeat", ErrorCode::kInvalidArgument);
      } else {
        int unused_min = 0, unused_max = 0;
        size_t unused_end = 0;
        if (c == '{' && regex_detail::parse_repeat_braces(pattern_, pos_, &unused_min, &unused_max,
                                                          &unused_end)) {
          return error("nothing to repeat", ErrorCode::kInvalidArgument);
        }
        if (c == '\\' && pos_ + 1 < pattern_.size() &&
            (pattern_[pos_ + 1] == 'b' || pattern_[pos_ + 1] == 'B')) {
          return error("the word boundary \\b");
        }
        size_t end = 0;
        STRATA_ASSIGN_OR_RETURN(CharSet set, regex_detail::parse_char_atom(pattern_, pos_, &end));
        pos_ = end;
        Node leaf;
        leaf.kind = Node::kSet;
        leaf.set = std::move(set);
        atom = add(std::move(leaf));
      }
      // Quantifier (a lazy one accepts the same language).
      int min = 1, max = 1;
      bool quantified = false;
      if (pos_ < pattern_.size()) {
        const char q = pattern_[pos_];
        size_t end = 0;
        if (q == '*' || q == '+' || q == '?') {
          ++pos_;
          min = q == '+' ? 1 : 0;
          max = q == '?' ? 1 : -1;
          quantified = true;
        } else if (q == '{' &&
                   regex_detail::parse_repeat_braces(pattern_, pos_, &min, &max, &end)) {
          pos_ = end;
          quantified = true;
        }
      }
      if (quantified) {
        if (max >= 0 && max < min) {
          return error("quantifier {n,m} with m < n", ErrorCode::kInvalidArgument);
        }
        if (pos_ < pattern_.size() && pattern_[pos_] == '?') ++pos_;
        Node repeat;
        repeat.kind = Node::kRepeat;
        repeat.kids = {atom};
        repeat.min = min;
        repeat.max = max;
        atom = add(std::move(repeat));
      }
      seq.kids.push_back(atom);
    }
    return add(std::move(seq));
  }

  std::string_view pattern_;
  size_t pos_ = 0;
  std::vector<Node> nodes_;
};

// Thompson NFA: edges on a character set, epsilon, or the assertions ^ and $.
class Nfa {
 public:
  enum EdgeKind { kChar, kEpsilon, kAtStart, kAtEnd };
  struct Edge {
    EdgeKind kind;
    uint32_t to;
    CharSet set;
  };

  uint32_t add_state() {
    edges_.emplace_back();
    return static_cast<uint32_t>(edges_.size() - 1);
  }
  void add_edge(uint32_t from, EdgeKind kind, uint32_t to, CharSet set = {}) {
    edges_[from].push_back(Edge{kind, to, std::move(set)});
  }
  size_t size() const { return edges_.size(); }
  const std::vector<Edge>& edges(uint32_t s) const { return edges_[s]; }

  // A fragment for node `id`: (entry, exit).
  Result<std::pair<uint32_t, uint32_t>> build(const std::vector<Node>& nodes, size_t id) {
    if (size() > kMaxNfaStates) {
      return make_error(ErrorCode::kUnsupported, "a pattern that repeats too much");
    }
    const Node& node = nodes[id];
    const uint32_t in = add_state();
    uint32_t out = in;
    switch (node.kind) {
      case Node::kSet:
        out = add_state();
        add_edge(in, kChar, out, node.set);
        break;
      case Node::kStart:
      case Node::kEnd:
        out = add_state();
        add_edge(in, node.kind == Node::kStart ? kAtStart : kAtEnd, out);
        break;
      case Node::kConcat:
        for (size_t kid : node.kids) {
          STRATA_ASSIGN_OR_RETURN(auto part, build(nodes, kid));
          add_edge(out, kEpsilon, part.first);
          out = part.second;
        }
        break;
      case Node::kAlt:
        out = add_state();
        for (size_t kid : node.kids) {
          STRATA_ASSIGN_OR_RETURN(auto part, build(nodes, kid));
          add_edge(in, kEpsilon, part.first);
          add_edge(part.second, kEpsilon, out);
        }
        break;
      case Node::kRepeat: {
        for (int i = 0; i < node.min; ++i) {
          STRATA_ASSIGN_OR_RETURN(auto part, build(nodes, node.kids[0]));
          add_edge(out, kEpsilon, part.first);
          out = part.second;
        }
        if (node.max < 0) {
          STRATA_ASSIGN_OR_RETURN(auto part, build(nodes, node.kids[0]));
          const uint32_t loop = add_state();
          add_edge(out, kEpsilon, loop);
          add_edge(loop, kEpsilon, part.first);
          add_edge(part.second, kEpsilon, loop);
          out = loop;
        } else {
          const uint32_t end = add_state();
          for (int i = node.min; i < node.max; ++i) {
            STRATA_ASSIGN_OR_RETURN(auto part, build(nodes, node.kids[0]));
            add_edge(out, kEpsilon, end);
            add_edge(out, kEpsilon, part.first);
            out = part.second;
          }
          add_edge(out, kEpsilon, end);
          out = end;
        }
        break;
      }
    }
    return std::make_pair(in, out);
  }

 private:
  std::vector<std::vector<Edge>> edges_;
};

}  // namespace

Result<CharDfa> CharDfa::from_pattern(std::string_view pattern) {
  if (auto dfa = regex_detail::lookahead_dfa(pattern)) return std::move(*dfa);
  STRATA_RETURN_IF_ERROR(regex_detail::check_group_nesting(pattern));
  PatternParser parser(pattern);
  STRATA_ASSIGN_OR_RETURN(size_t root, parser.parse());
  Nfa nfa;
  // Search semantics: any text before and after the match.
  const uint32_t start = nfa.add_state();
  STRATA_ASSIGN_OR_RETURN(auto body, nfa.build(parser.nodes(), root));
  const uint32_t accept = nfa.add_state();
  nfa.add_edge(start, Nfa::kChar, start, all_chars());
  nfa.add_edge(start, Nfa::kEpsilon, body.first);
  nfa.add_edge(body.second, Nfa::kEpsilon, accept);
  nfa.add_edge(accept, Nfa::kChar, accept, all_chars());

  // Subset construction. An element is nfa_state * 2 + after_dollar: past a `$` only the end
  // of the text may follow. The start set alone may cross `^`.
  std::vector<uint32_t> seen(nfa.size() * 2, 0);  // the closure call that last saw an element
  uint32_t stamp = 0;
  const auto closure = [&](std::vector<uint32_t> seeds, bool at_start) {
    std::vector<uint32_t> out;
    ++stamp;
    while (!seeds.empty()) {
      const uint32_t e = seeds.back();
      seeds.pop_back();
      if (seen[e] == stamp) continue;
      seen[e] = stamp;
      out.push_back(e);
      const uint32_t s = e / 2, dollar = e % 2;
      for (const Nfa::Edge& edge : nfa.edges(s)) {
        if (edge.kind == Nfa::kEpsilon) seeds.push_back(edge.to * 2 + dollar);
        if (edge.kind == Nfa::kAtStart && at_start) seeds.push_back(edge.to * 2 + dollar);
        if (edge.kind == Nfa::kAtEnd) seeds.push_back(edge.to * 2 + 1);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  CharDfa dfa;
  std::map<std::vector<uint32_t>, uint32_t> ids;
  std::vector<std::vector<uint32_t>> sets;
  std::vector<uint32_t> first = closure({start * 2}, /*at_start=*/true);
  first.push_back(UINT32_MAX);  // the start set is distinct from an equal later one
  ids[first] = 0;
  sets.push_back(first);
  dfa.states_.emplace_back();
  for (size_t current = 0; current < sets.size(); ++current) {
    if (sets.size() > kMaxDfaStates * 4) {
      return make_error(ErrorCode::kUnsupported,
                        "pattern \"" + std::string(pattern) + "\": an automaton too large");
    }
    const std::vector<uint32_t> set = sets[current];
    std::vector<const Nfa::Edge*> moves;
    std::vector<uint32_t> bounds;
    for (uint32_t e : set) {
      if (e == UINT32_MAX) continue;
      if (e / 2 == accept) dfa.states_[current].accepting = true;
      if (e % 2) continue;
      for (const Nfa::Edge& edge : nfa.edges(e / 2)) {
        if (edge.kind != Nfa::kChar) continue;
        moves.push_back(&edge);
        for (const auto& [lo, hi] : edge.set.ranges()) {
          bounds.push_back(lo);
          bounds.push_back(hi + 1);
        }
      }
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    std::vector<std::vector<uint32_t>> targets(bounds.empty() ? 0 : bounds.size() - 1);
    for (const Nfa::Edge* edge : moves) {
      for (const auto& [lo, hi] : edge->set.ranges()) {
        const size_t a = std::lower_bound(bounds.begin(), bounds.end(), lo) - bounds.begin();
        const size_t b = std::lower_bound(bounds.begin(), bounds.end(), hi + 1) - bounds.begin();
        for (size_t k = a; k < b; ++k) targets[k].push_back(edge->to * 2);
      }
    }
    std::map<uint32_t, CharSet> by_target;
    for (size_t k = 0; k < targets.size(); ++k) {
      if (targets[k].empty()) continue;
      std::vector<uint32_t> next = closure(targets[k], /*at_start=*/false);
      auto [it, inserted] = ids.emplace(next, static_cast<uint32_t>(sets.size()));
      if (inserted) {
        sets.push_back(next);
        dfa.states_.emplace_back();
      }
      by_target[it->second].add(bounds[k], bounds[k + 1] - 1);
    }
    for (auto& [target, chars] : by_target) {
      dfa.states_[current].next.emplace_back(std::move(chars), target);
    }
  }
  dfa.minimize();
  return dfa;
}

CharDfa CharDfa::literals(const std::vector<std::string>& texts) {
  CharDfa dfa;
  dfa.states_.emplace_back();
  std::vector<std::map<uint32_t, uint32_t>> children(1);
  for (const std::string& text : texts) {
    uint32_t node = 0;
    for (uint32_t c : utf8_decode(text)) {
      auto it = children[node].find(c);
      if (it == children[node].end()) {
        dfa.states_.emplace_back();
        children.emplace_back();
        it = children[node].emplace(c, static_cast<uint32_t>(dfa.states_.size() - 1)).first;
      }
      node = it->second;
    }
    dfa.states_[node].accepting = true;
  }
  for (size_t s = 0; s < children.size(); ++s) {
    for (const auto& [c, child] : children[s]) {
      dfa.states_[s].next.emplace_back(regex_detail::range_set(c, c), child);
    }
  }
  dfa.minimize();
  return dfa;
}

CharDfa CharDfa::any() {
  CharDfa dfa;
  dfa.states_.emplace_back();
  dfa.states_[0].accepting = true;
  dfa.states_[0].next.emplace_back(all_chars(), 0);
  return dfa;
}

CharDfa CharDfa::complement() const {
  CharDfa out = *this;
  const uint32_t dead = static_cast<uint32_t>(out.states_.size());
  out.states_.emplace_back();
  out.states_[dead].next.emplace_back(all_chars(), dead);
  for (uint32_t s = 0; s < dead; ++s) {
    CharSet covered;
    for (const auto& [chars, target] : out.states_[s].next) covered.add(chars);
    const CharSet missing = covered.complement();
    if (!missing.empty()) out.states_[s].next.emplace_back(missing, dead);
  }
  for (State& state : out.states_) state.accepting = !state.accepting;
  out.minimize();
  return out;
}

CharDfa CharDfa::intersect(const CharDfa& other) const {
  CharDfa out;
  out.overflowed_ = overflowed_ || other.overflowed_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> ids;
  std::vector<std::pair<uint32_t, uint32_t>> pairs = {{0, 0}};
  ids[{0, 0}] = 0;
  out.states_.emplace_back();
  for (size_t current = 0; current < pairs.size(); ++current) {
    if (pairs.size() > kMaxDfaStates * 4) {
      out.overflowed_ = true;
      break;
    }
    const auto [a, b] = pairs[current];
    out.states_[current].accepting = states_[a].accepting && other.states_[b].accepting;
    for (const auto& [set_a, to_a] : states_[a].next) {
      for (const auto& [set_b, to_b] : other.states_[b].next) {
        CharSet both = set_a.intersect(set_b);
        if (both.empty()) continue;
        auto [it, inserted] = ids.emplace(std::make_pair(to_a, to_b), pairs.size());
        if (inserted) {
          pairs.emplace_back(to_a, to_b);
          out.states_.emplace_back();
        }
        out.states_[current].next.emplace_back(std::move(both), it->second);
      }
    }
  }
  out.minimize();
  return out;
}

CharDfa CharDfa::with_length(long min, long max) const {
  const long cap = max >= 0 ? max : min;
  CharDfa out;
  out.overflowed_ = overflowed_;
  std::map<std::pair<uint32_t, long>, uint32_t> ids;
  std::vector<std::pair<uint32_t, long>> pairs = {{0, 0}};
  ids[{0, 0}] = 0;
  out.states_.emplace_back();
  for (size_t current = 0; current < pairs.size(); ++current) {
    if (pairs.size() > kMaxDfaStates * 4) {
      out.overflowed_ = true;
      break;
    }
    const auto [q, n] = pairs[current];
    out.states_[current].accepting = states_[q].accepting && n >= min;
    if (max >= 0 && n >= max) continue;
    const long next_n = std::min(n + 1, cap);
    for (const auto& [chars, to] : states_[q].next) {
      auto [it, inserted] = ids.emplace(std::make_pair(to, next_n), pairs.size());
      if (inserted) {
        pairs.emplace_back(to, next_n);
        out.states_.emplace_back();
      }
      out.states_[current].next.emplace_back(chars, it->second);
    }
  }
  out.minimize();
  return out;
}

bool CharDfa::empty() const { return !states_[0].accepting && states_[0].next.empty(); }

bool CharDfa::accepts(std::string_view text) const {
  uint32_t s = 0;
  for (uint32_t c : utf8_decode(text)) {
    bool moved = false;
    for (const auto& [chars, to] : states_[s].next) {
      if (chars.contains(c)) {
        s = to;
        moved = true;
        break;
      }
    }
    if (!moved) return false;
  }
  return states_[s].accepting;
}

void CharDfa::minimize() {
  // A construction cut off at the state cap is incomplete and only ever refused; Moore's
  // refinement of its ~16,000 states (a length counter splits one state per round) took minutes.
  if (overflowed_) return;
  const size_t n = states_.size();
  // Live states: reachable from the start (all are, by construction) and co-reachable.
  std::vector<std::vector<uint32_t>> reverse(n);
  for (uint32_t s = 0; s < n; ++s) {
    for (const auto& [chars, to] : states_[s].next) reverse[to].push_back(s);
  }
  std::vector<char> live(n, 0);
  std::deque<uint32_t> queue;
  for (uint32_t s = 0; s < n; ++s) {
    if (states_[s].accepting) {
      live[s] = 1;
      queue.push_back(s);
    }
  }
  while (!queue.empty()) {
    const uint32_t s = queue.front();
    queue.pop_front();
    for (uint32_t p : reverse[s]) {
      if (!live[p]) {
        live[p] = 1;
        queue.push_back(p);
      }
    }
  }
  if (!live[0]) {
    states_.assign(1, State{});
    return;
  }
  // Moore: split classes by acceptance, then by where each character leads.
  std::vector<uint32_t> part(n, 0);
  for (uint32_t s = 0; s < n; ++s) part[s] = live[s] ? (states_[s].accepting ? 1 : 2) : 0;
  size_t n_parts = 0;
  while (true) {
    std::map<std::vector<uint32_t>, uint32_t> signatures;
    std::vector<uint32_t> next_part(n, 0);
    for (uint32_t s = 0; s < n; ++s) {
      std::vector<uint32_t> signature = {part[s]};
      if (live[s]) {
        std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> moves;
        for (const auto& [chars, to] : states_[s].next) {
          if (!live[to]) continue;
          for (const auto& [lo, hi] : chars.ranges()) moves.emplace_back(lo, hi, part[to]);
        }
        std::sort(moves.begin(), moves.end());
        for (size_t k = 0; k < moves.size(); ++k) {
          auto [lo, hi, p] = moves[k];
          while (k + 1 < moves.size() && std::get<0>(moves[k + 1]) == hi + 1 &&
                 std::get<2>(moves[k + 1]) == p) {
            hi = std::get<1>(moves[++k]);
          }
          signature.insert(signature.end(), {lo, hi, p});
        }
      }
      next_part[s] = signatures.emplace(signature, signatures.size()).first->second;
    }
    part = std::move(next_part);
    if (signatures.size() == n_parts) break;
    n_parts = signatures.size();
  }
  // Renumber: the start's class first, dead states dropped.
  std::vector<int64_t> new_id(n_parts, -1);
  std::vector<uint32_t> representative;
  new_id[part[0]] = 0;
  representative.push_back(0);
  for (uint32_t s = 0; s < n; ++s) {
    if (live[s] && new_id[part[s]] < 0) {
      new_id[part[s]] = static_cast<int64_t>(representative.size());
      representative.push_back(s);
    }
  }
  std::vector<State> out(representative.size());
  for (size_t i = 0; i < representative.size(); ++i) {
    const State& old = states_[representative[i]];
    out[i].accepting = old.accepting;
    std::map<uint32_t, CharSet> by_target;
    for (const auto& [chars, to] : old.next) {
      if (live[to]) by_target[static_cast<uint32_t>(new_id[part[to]])].add(chars);
    }
    for (auto& [target, chars] : by_target) out[i].next.emplace_back(std::move(chars), target);
  }
  states_ = std::move(out);
}

std::string CharDfa::to_gbnf(
    const std::function<std::string()>& new_rule,
    const std::function<void(const std::string&, std::string)>& set_rule) const {
  std::vector<std::string> names(states_.size());
  for (std::string& name : names) name = new_rule();
  for (size_t s = 0; s < states_.size(); ++s) {
    std::string body;
    for (const auto& [chars, to] : states_[s].next) {
      body += (body.empty() ? "" : " | ") + regex_detail::charset_gbnf(chars) + " " + names[to];
    }
    if (states_[s].accepting) body = body.empty() ? "\"\"" : "(" + body + ")?";
    set_rule(names[s], std::move(body));
  }
  return names[0];
}

}  // namespace strata::grammar
