// JSON Schema keywords that count: uniqueItems and minProperties/maxProperties.
//
// uniqueItems, where the items come from a small finite set: the grammar tracks which values
// the array already holds (one rule per subset, 2^n for n values), so a value can appear once.
// Values compare as JSON Schema compares them (1 and 1.0 are one value; literal() admits both
// spellings), so the set is deduplicated by value first.
//
// minProperties/maxProperties: the chain of declared members carries the number written so far
// (one rule per member and count), and the additional members that may follow repeat between
// the counts still missing and still allowed. Additional keys are told apart from declared
// ones, but two additional members with the same key would count twice (JSON texts with
// duplicate keys are outside what the grammar promises).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "grammar/json_schema_converter.h"

namespace strata::grammar::json_schema_detail {
namespace {

constexpr size_t kMaxUniqueValues = 8;

bool scalar_of_types(const Json& value, const std::vector<std::string>& types) {
  for (const std::string& t : types) {
    if ((t == "null" && value.is_null()) || (t == "boolean" && value.is_boolean()) ||
        (t == "string" && value.is_string()) || (t == "number" && value.is_number()) ||
        (t == "integer" && value.is_number() &&
         std::floor(value.get<double>()) == value.get<double>())) {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<std::string> Converter::unique_array(const Json& item_in, long min_items, long max_items,
                                            const std::string& path) {
  const auto unsupported = [&]() {
    return make_error(ErrorCode::kUnsupported,
                      "items at " + path + " are not drawn from a finite set of at most " +
                          std::to_string(kMaxUniqueValues) + " scalar values");
  };
  STRATA_ASSIGN_OR_RETURN(Json item, inline_ref(item_in, path + "/items"));
  if (!item.is_object()) return unsupported();
  std::vector<std::string> types = {"null", "boolean", "string", "number"};
  if (item.contains("type")) {
    types.clear();
    const Json& t = item["type"];
    for (const Json& one : t.is_array() ? t : Json::array({t})) {
      if (one.is_string()) types.push_back(one.get<std::string>());
    }
  }
  Json candidates;
  if (item.contains("const")) {
    candidates = Json::array({item["const"]});
  } else if (item.contains("enum") && item["enum"].is_array()) {
    candidates = item["enum"];
  } else if (types.size() == 1 && types[0] == "boolean") {
    candidates = Json::array({true, false});
  } else if (types.size() == 1 && types[0] == "null") {
    candidates = Json::array({nullptr});
  } else {
    return unsupported();
  }
  for (const auto& [key, value] : item.items()) {
    if (is_validation_keyword(key) && key != "type" && key != "enum" && key != "const" &&
        key != "$strata:notEnum") {
      return unsupported();
    }
  }
  std::vector<Json> values;
  for (const Json& v : candidates) {
    if (!v.is_primitive() || !scalar_of_types(v, types)) continue;
    if (item.contains("enum") && item.contains("const") &&
        std::find(item["enum"].begin(), item["enum"].end(), v) == item["enum"].end()) {
      continue;
    }
    if (item.contains("$strata:notEnum") && item["$strata:notEnum"].is_array() &&
        std::find(item["$strata:notEnum"].begin(), item["$strata:notEnum"].end(), v) !=
            item["$strata:notEnum"].end()) {
      continue;
    }
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  if (values.size() > kMaxUniqueValues) return unsupported();
  const long n = static_cast<long>(values.size());
  if (max_items < 0 || max_items > n) max_items = n;
  if (min_items > max_items) {
    return make_error(ErrorCode::kInvalidArgument,
                      "uniqueItems at " + path + " asks for more distinct items than exist");
  }
  std::vector<std::string> literals;
  for (const Json& v : values) {
    STRATA_ASSIGN_OR_RETURN(std::string text, literal(v));
    literals.push_back(text);
  }
  const std::string ws = base("ws");
  // after[S]: the rest of the array once the values in S were written.
  std::map<uint32_t, std::string> after;
  const auto rule_for = [&](uint32_t used) {
    auto it = after.find(used);
    if (it == after.end()) it = after.emplace(used, new_rule(path + "/unique")).first;
    return it->second;
  };
  std::vector<uint32_t> pending;
  std::vector<std::string> first;
  for (long v = 0; v < n && max_items > 0; ++v) {
    first.push_back(literals[v] + " " + ws + " " + rule_for(1u << v));
    pending.push_back(1u << v);
  }
  std::vector<bool> written(size_t{1} << n, false);
  while (!pending.empty()) {
    const uint32_t used = pending.back();
    pending.pop_back();
    if (written[used]) continue;
    written[used] = true;
    const long count = __builtin_popcount(used);
    std::vector<std::string> next;
    if (count < max_items) {
      for (long v = 0; v < n; ++v) {
        if (used & (1u << v)) continue;
        const uint32_t more = used | (1u << v);
        next.push_back("\",\" " + ws + " " + literals[v] + " " + ws + " " + rule_for(more));
        pending.push_back(more);
      }
    }
    std::string body;
    for (const std::string& alt : next) body += (body.empty() ? "" : " | ") + alt;
    if (count >= min_items) body = body.empty() ? "\"\"" : "(" + body + ")?";
    set_rule(rule_for(used), body);
  }
  std::string body;
  for (const std::string& alt : first) body += (body.empty() ? "" : " | ") + alt;
  if (min_items == 0) body = body.empty() ? "" : "(" + body + ")?";
  return "\"[\" " + ws + " " + (body.empty() ? "" : "(" + body + ") ") + "\"]\"";
}

Result<std::string> Converter::counted_object(const std::vector<std::string>& kvs,
                                              const std::vector<bool>& required,
                                              const std::vector<std::string>& extras, long min,
                                              long max, const std::string& path) {
  const long n = static_cast<long>(kvs.size());
  constexpr long kMaxRepeat = 10000;
  if ((n + 1) * (n + 1) > 20000 || min > kMaxRepeat || max > kMaxRepeat) {
    return make_error(ErrorCode::kUnsupported,
                      "minProperties/maxProperties at " + path + " over too many members");
  }
  const std::string ws = base("ws");
  std::string extra;
  for (const std::string& e : extras) extra += (extra.empty() ? "" : " | ") + e;
  if (extras.size() > 1) extra = "(" + extra + ")";
  // rest(i, c): members i.. and the extras after c members were written; nullopt when no
  // way on satisfies the counts.
  std::map<std::pair<long, long>, std::optional<std::string>> memo;
  std::function<std::optional<std::string>(long, long)> rest =
      [&](long i, long c) -> std::optional<std::string> {
    if (auto it = memo.find({i, c}); it != memo.end()) return it->second;
    std::optional<std::string> out;
    if (i == n) {
      const long lo = std::max(0L, min - c), hi = max < 0 ? -1 : max - c;
      if (hi >= 0 && hi < lo) {
        out = std::nullopt;
      } else if (extra.empty() || hi == 0) {
        if (lo == 0) out = "";
      } else {
        const auto repeat = [](long a, long b) {
          if (b < 0) return a == 0 ? std::string("*") : "{" + std::to_string(a) + ",}";
          return "{" + std::to_string(a) + "," + std::to_string(b) + "}";
        };
        const std::string with_comma = "(\",\" " + ws + " " + extra + " " + ws + ")";
        if (c > 0) {
          out = with_comma + repeat(lo, hi);
        } else {
          const std::string seq = extra + " " + ws + " " + with_comma +
                                  repeat(std::max(0L, lo - 1), hi < 0 ? -1 : hi - 1);
          out = lo > 0 ? seq : "(" + seq + ")?";
        }
      }
    } else {
      std::vector<std::string> alternatives;
      bool may_skip_to_empty = false;
      if (max < 0 || c < max) {
        if (auto next = rest(i + 1, c + 1)) {
          alternatives.push_back((c > 0 ? "\",\" " + ws + " " : std::string()) + kvs[i] + " " + ws +
                                 (next->empty() ? "" : " " + *next));
        }
      }
      if (!required[i]) {
        if (auto next = rest(i + 1, c)) {
          if (next->empty()) {
            may_skip_to_empty = true;
          } else {
            alternatives.push_back(*next);
          }
        }
      }
      if (!alternatives.empty() || may_skip_to_empty) {
        std::string body;
        for (const std::string& alt : alternatives) body += (body.empty() ? "" : " | ") + alt;
        if (may_skip_to_empty) body = body.empty() ? "" : "(" + body + ")?";
        if (body.empty()) {
          out = "";
        } else {
          const std::string name = new_rule(path + "/count");
          set_rule(name, body);
          out = name;
        }
      }
    }
    memo[{i, c}] = out;
    return out;
  };
  std::optional<std::string> body = rest(0, 0);
  if (!body) {
    return make_error(ErrorCode::kInvalidArgument,
                      "minProperties/maxProperties at " + path + " admit no object");
  }
  return "\"{\" " + ws + (body->empty() ? "" : " " + *body) + " \"}\"";
}

}  // namespace strata::grammar::json_schema_detail
