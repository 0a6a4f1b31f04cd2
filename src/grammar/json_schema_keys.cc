// JSON Schema to GBNF: which keys an object may hold beyond its declared properties. A key that
// no declared name equals (a trie, or an automaton when patterns or propertyNames also decide),
// split by the set of patternProperties it matches; the keys propertyNames admits.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_internal.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/utf8_ranges.h"

namespace strata::grammar::json_schema_detail {
namespace {

std::string class_char(uint32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), c < 0x10000 ? "\\u%04X" : "\\U%08X", c);
  return buf;
}

}  // namespace

Result<std::string> Converter::key_not_in(const std::vector<std::string>& names,
                                          const std::string& path) {
  if (names.empty()) return base("string");
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (auto it = keys_not_in_.find(sorted); it != keys_not_in_.end()) return it->second;
  // A trie over the names' code points. At each node the key may go on with a child's
  // character, or leave the trie with any other character (then anything may follow), or end
  // there unless a name ends there. Names with characters JSON escapes are not excluded.
  struct Node {
    std::map<uint32_t, size_t> children;
    bool terminal = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& name : names) {
    const std::vector<uint32_t> chars = utf8_decode(name);
    if (std::any_of(chars.begin(), chars.end(),
                    [](uint32_t c) { return c < 0x20 || c == '"' || c == '\\'; })) {
      // Such a key could come back escaped another way as an additional one.
      return make_error(ErrorCode::kUnsupported,
                        "a property name with characters JSON escapes next to additional "
                        "properties at " +
                            path + " cannot be enforced by a grammar");
    }
    size_t node = 0;
    for (uint32_t c : chars) {
      auto it = trie[node].children.find(c);
      if (it == trie[node].children.end()) {
        trie.emplace_back();
        it = trie[node].children.emplace(c, trie.size() - 1).first;
      }
      node = it->second;
    }
    trie[node].terminal = true;
  }
  const std::string any_chars = base("char") + "*";
  std::vector<std::string> names_of(trie.size());
  for (size_t i = 0; i < trie.size(); ++i) names_of[i] = new_rule(path + "/key");
  for (size_t i = 0; i < trie.size(); ++i) {
    std::vector<std::string> alternatives;
    std::string other = "[^\"\\\\\\x00-\\x1F";
    for (const auto& [c, child] : trie[i].children) {
      alternatives.push_back("[" + class_char(c) + "] " + names_of[child]);
      other += class_char(c);
    }
    alternatives.push_back(other + "] " + any_chars);
    alternatives.push_back("\"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) " + any_chars);
    std::string body;
    for (size_t k = 0; k < alternatives.size(); ++k) body += (k ? " | " : "") + alternatives[k];
    if (!trie[i].terminal) body = "(" + body + ")?";
    set_rule(names_of[i], body);
  }
  const std::string key = "\"\\\"\" " + names_of[0] + " \"\\\"\"";
  keys_not_in_.emplace(std::move(sorted), key);
  return key;
}

Result<std::vector<std::string>> Converter::pattern_members(
    const Json& patterns, const Json& additional, const std::vector<std::string>& declared,
    const std::optional<CharDfa>& key_filter, const std::string& path) {
  // Undeclared keys split by the set of patterns they match: a key matching some patterns
  // must satisfy all of their schemas, a key matching none additionalProperties.
  std::vector<std::string> sources;
  std::vector<Json> schemas;
  const bool additional_true = additional.is_boolean() && additional.get<bool>();
  for (const auto& [pattern, sub] : patterns.items()) {
    // A pattern that asks nothing of its keys' values differs from additionalProperties only
    // when additionalProperties asks something.
    if (additional_true && !has_validation_keywords(sub) && !sub.is_boolean()) continue;
    if (additional_true && sub.is_boolean() && sub.get<bool>()) continue;
    sources.push_back(pattern);
    schemas.push_back(sub);
  }
  if (sources.size() > 16) {
    return make_error(ErrorCode::kUnsupported,
                      "more than 16 restricting patternProperties at " + path +
                          " cannot be enforced by a grammar; remove some or ask for best effort");
  }
  std::vector<CharDfa> matches, misses;
  for (const std::string& pattern : sources) {
    auto dfa = CharDfa::from_pattern(pattern);
    if (!dfa.ok()) return make_error(dfa.error().code, dfa.error().message + " (at " + path + ")");
    misses.push_back(dfa->complement());
    matches.push_back(std::move(dfa).value());
  }
  // Depth-first over which patterns a key matches, dropping key sets that become empty.
  struct Class {
    CharDfa keys;
    Json schemas;
  };
  std::vector<Class> classes;
  CharDfa undeclared = CharDfa::literals(declared).complement();
  if (key_filter) undeclared = undeclared.intersect(*key_filter);
  std::vector<Class> pending = {{std::move(undeclared), Json::array()}};
  std::vector<size_t> depth = {0};
  while (!pending.empty()) {
    Class current = std::move(pending.back());
    const size_t i = depth.back();
    pending.pop_back();
    depth.pop_back();
    if (current.keys.size() > kMaxDfaStates || classes.size() + pending.size() > 64) {
      return make_error(
          ErrorCode::kUnsupported,
          "patternProperties at " + path + " whose key classes need too large an automaton");
    }
    if (current.keys.empty()) continue;
    if (i == sources.size()) {
      classes.push_back(std::move(current));
      continue;
    }
    Json with = current.schemas;
    with.push_back(schemas[i]);
    pending.push_back({current.keys.intersect(misses[i]), current.schemas});
    depth.push_back(i + 1);
    pending.push_back({current.keys.intersect(matches[i]), with});
    depth.push_back(i + 1);
  }
  std::vector<std::string> members;
  for (const Class& c : classes) {
    const Json& all = c.schemas;
    const Json value_schema = all.empty()       ? additional
                              : all.size() == 1 ? all[0]
                                                : Json{{"allOf", all}};
    if (value_schema.is_boolean() && !value_schema.get<bool>()) continue;
    auto value =
        visit(value_schema, path + (all.empty() ? "/additionalProperties" : "/patternProperties"));
    if (!value.ok() && value.error().code == ErrorCode::kInvalidArgument) continue;
    if (!value.ok()) return value.error();
    const std::string hint = path + "/key";
    const std::string key = c.keys.to_gbnf(
        [&] { return new_rule(hint); },
        [&](const std::string& name, std::string body) { set_rule(name, std::move(body)); });
    members.push_back("\"\\\"\" " + key + " \"\\\"\" " + base("ws") + " \":\" ws " + *value);
  }
  return members;
}

Result<std::optional<CharDfa>> Converter::property_names(const Json& names_in,
                                                         const std::string& path) {
  if (names_in.is_boolean()) {
    if (names_in.get<bool>()) return std::optional<CharDfa>();
    return std::optional<CharDfa>(CharDfa::literals({}));  // no key at all
  }
  STRATA_ASSIGN_OR_RETURN(Json names, inline_ref(names_in, path + "/propertyNames"));
  if (!has_validation_keywords(names)) return std::optional<CharDfa>();
  std::vector<std::string> patterns, excluded;
  long min_length = 0, max_length = -1;
  std::optional<CharDfa> listed;
  for (const auto& [key, value] : names.items()) {
    if (!is_validation_keyword(key)) continue;
    if (key == "type") {
      const bool string = value == Json("string") ||
                          (value.is_array() && std::count(value.begin(), value.end(), "string"));
      if (!string) return std::optional<CharDfa>(CharDfa::literals({}));  // no key at all
    } else if (key == "pattern" && value.is_string()) {
      patterns.push_back(value.get<std::string>());
    } else if (key == "$strata:patterns" && value.is_array()) {
      for (const Json& p : value) {
        if (p.is_string()) patterns.push_back(p.get<std::string>());
      }
    } else if (key == "minLength" && value.is_number()) {
      min_length = static_cast<long>(std::ceil(value.get<double>()));
    } else if (key == "maxLength" && value.is_number()) {
      max_length = static_cast<long>(std::floor(value.get<double>()));
    } else if ((key == "enum" || key == "const") && (value.is_array() || key == "const")) {
      std::vector<std::string> texts;
      for (const Json& v : key == "const" ? Json::array({value}) : value) {
        if (v.is_string()) texts.push_back(v.get<std::string>());
      }
      CharDfa these = CharDfa::literals(texts);
      listed = listed ? listed->intersect(these) : these;
    } else if (key == "format" && value.is_string()) {
      bool unsupported = false;
      std::optional<std::string> regex = format_regex(value.get<std::string>(), &unsupported);
      if (regex) patterns.push_back(*regex);
      if (unsupported) {
        STRATA_RETURN_IF_ERROR(
            unenforceable("propertyNames format '" + value.get<std::string>() + "'", path));
      }
    } else {
      STRATA_RETURN_IF_ERROR(unenforceable("propertyNames with '" + key + "'", path));
    }
  }
  STRATA_ASSIGN_OR_RETURN(CharDfa keys,
                          string_automaton(patterns, {}, excluded, min_length, max_length));
  if (listed) keys = keys.intersect(*listed);
  if (keys.size() > kMaxDfaStates) {
    return make_error(ErrorCode::kUnsupported,
                      "propertyNames at " + path + " whose keys need too large an automaton");
  }
  return std::optional<CharDfa>(std::move(keys));
}

}  // namespace strata::grammar::json_schema_detail
