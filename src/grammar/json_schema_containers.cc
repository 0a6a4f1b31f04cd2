// JSON Schema to GBNF: objects, arrays, allOf merging and $ref resolution.
//
// An object's keys come in one fixed order: the schema's `properties` in their order (required
// ones always, optional ones skippable), then any additional keys. A chain of rules tracks
// whether a key was already written, so commas land only between members.
#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_internal.h"
#include "grammar/regex_to_gbnf.h"

namespace strata::grammar::json_schema_detail {
namespace {

std::string repeat_suffix(long min, long max) {
  if (min == 0 && max < 0) return "*";
  if (min == 1 && max < 0) return "+";
  if (min == 0 && max == 1) return "?";
  if (max < 0) return "{" + std::to_string(min) + ",}";
  if (min == max) return "{" + std::to_string(min) + "}";
  return "{" + std::to_string(min) + "," + std::to_string(max) + "}";
}

// Whether `text` matches the ECMA-262 `pattern` anywhere (JSON Schema's pattern semantics);
// nullopt when std::regex cannot compile it.
std::optional<bool> regex_search(const std::string& pattern, const std::string& text) {
  try {
    return std::regex_search(text, std::regex(pattern, std::regex::ECMAScript));
  } catch (const std::regex_error&) {
    return std::nullopt;
  }
}

// UTF-8 text as code points (the parser validated it).
std::vector<uint32_t> code_points(const std::string& text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<uint8_t>(text[i]);
    const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : 4;
    uint32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 7);
    for (int k = 1; k < n && i + k < text.size(); ++k) {
      c = (c << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3F);
    }
    out.push_back(c);
    i += n;
  }
  return out;
}

std::string pointer_decode(const std::string& token) {
  std::string decoded;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '%' && i + 2 < token.size() && std::isxdigit(token[i + 1]) &&
        std::isxdigit(token[i + 2])) {
      decoded += static_cast<char>(std::stoi(token.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      decoded += token[i];
    }
  }
  std::string out;
  for (size_t i = 0; i < decoded.size(); ++i) {
    if (decoded[i] == '~' && i + 1 < decoded.size() &&
        (decoded[i + 1] == '0' || decoded[i + 1] == '1')) {
      out += decoded[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += decoded[i];
    }
  }
  return out;
}

std::string class_char(uint32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), c < 0x10000 ? "\\u%04X" : "\\U%08X", c);
  return buf;
}

}  // namespace

Result<std::string> Converter::key_not_in(const std::vector<std::string>& names,
                                          const std::string& path) {
  if (names.empty()) return base("string");
  // A trie over the names' code points. At each node the key may go on with a child's
  // character, or leave the trie with any other character (then anything may follow), or end
  // there unless a name ends there. Names with characters JSON escapes are not excluded.
  struct Node {
    std::map<uint32_t, size_t> children;
    bool terminal = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& name : names) {
    const std::vector<uint32_t> chars = code_points(name);
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
  return "\"\\\"\" " + names_of[0] + " \"\\\"\"";
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
  if (sources.size() > 8) {
    return make_error(ErrorCode::kUnsupported,
                      "more than 8 restricting patternProperties at " + path +
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
    if (current.keys.empty()) continue;
    if (current.keys.size() > kMaxDfaStates || classes.size() + pending.size() > 64) {
      return make_error(
          ErrorCode::kUnsupported,
          "patternProperties at " + path + " whose key classes need too large an automaton");
    }
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
  return std::optional<CharDfa>(std::move(keys));
}

Result<std::string> Converter::object_grammar(const Json& schema, const std::string& path) {
  for (const char* keyword :
       {"dependencies", "dependentRequired", "dependentSchemas", "unevaluatedProperties"}) {
    if (schema.contains(keyword) && !(schema[keyword].is_object() && schema[keyword].empty())) {
      STRATA_RETURN_IF_ERROR(unenforceable("'" + std::string(keyword) + "'", path));
    }
  }
  const Json empty = Json::object();
  const Json& properties = schema.contains("properties") && schema["properties"].is_object()
                               ? schema["properties"]
                               : empty;
  const Json& patterns =
      schema.contains("patternProperties") && schema["patternProperties"].is_object()
          ? schema["patternProperties"]
          : empty;
  const Json additional =
      schema.contains("additionalProperties") ? schema["additionalProperties"] : Json(true);
  std::vector<std::string> required;
  if (schema.contains("required") && schema["required"].is_array()) {
    for (const Json& name : schema["required"]) {
      if (name.is_string() &&
          std::find(required.begin(), required.end(), name.get<std::string>()) == required.end()) {
        required.push_back(name.get<std::string>());
      }
    }
  }
  // The schema a member named `name` must satisfy beyond `declared` (patternProperties it
  // matches), or, for an undeclared name, additionalProperties.
  const auto member_schema = [&](const std::string& name, const Json* declared) -> Result<Json> {
    Json all = Json::array();
    if (declared) all.push_back(*declared);
    for (const auto& [pattern, sub] : patterns.items()) {
      std::optional<bool> match = regex_search(pattern, name);
      if (!match) {
        STRATA_RETURN_IF_ERROR(unenforceable("patternProperties '" + pattern + "'", path));
        continue;
      }
      if (*match) all.push_back(sub);
    }
    if (all.empty()) return additional;
    if (all.size() == 1) return all[0];
    return Json{{"allOf", all}};
  };
  struct Member {
    std::string kv;
    bool required = false;
  };
  std::vector<Member> members;
  std::vector<std::string> declared_names;
  std::optional<CharDfa> key_filter;
  if (schema.contains("propertyNames")) {
    STRATA_ASSIGN_OR_RETURN(key_filter, property_names(schema["propertyNames"], path));
  }
  const auto add_member = [&](const std::string& name, const Json& sub,
                              bool is_required) -> Status {
    if ((sub.is_boolean() && !sub.get<bool>()) || (key_filter && !key_filter->accepts(name))) {
      if (is_required) {
        return make_error(ErrorCode::kInvalidArgument, "property '" + name + "' at " + path +
                                                           " is required but its schema is false");
      }
      return ok_status();
    }
    auto visited = visit(sub, path + "/properties/" + name);
    if (!visited.ok() && visited.error().code == ErrorCode::kInvalidArgument && !is_required) {
      return ok_status();  // no value fits: the property cannot appear
    }
    STRATA_ASSIGN_OR_RETURN(std::string value, std::move(visited));
    members.push_back(
        {gbnf_literal("\"" + json_escape(name) + "\"") + " " + base("ws") + " \":\" ws " + value,
         is_required});
    return ok_status();
  };
  for (const auto& [name, sub] : properties.items()) {
    declared_names.push_back(name);
    const bool is_required = std::count(required.begin(), required.end(), name) > 0;
    STRATA_ASSIGN_OR_RETURN(Json effective, member_schema(name, &sub));
    STRATA_RETURN_IF_ERROR(add_member(name, effective, is_required));
  }
  for (const std::string& name : required) {
    if (properties.contains(name)) continue;
    declared_names.push_back(name);
    STRATA_ASSIGN_OR_RETURN(Json effective, member_schema(name, nullptr));
    STRATA_RETURN_IF_ERROR(add_member(name, effective, true));
  }
  // Members beyond the declared ones.
  std::vector<std::string> extras;
  if (patterns.empty() && !key_filter) {
    if (!(additional.is_boolean() && !additional.get<bool>())) {
      STRATA_ASSIGN_OR_RETURN(std::string key, key_not_in(declared_names, path));
      STRATA_ASSIGN_OR_RETURN(std::string value, visit(additional, path + "/additionalProperties"));
      extras.push_back(key + " " + base("ws") + " \":\" ws " + value);
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(
        extras, pattern_members(patterns, additional, declared_names, key_filter, path));
  }
  // minProperties / maxProperties beyond what the shape implies: count the members.
  const size_t n_required =
      std::count_if(members.begin(), members.end(), [](const Member& m) { return m.required; });
  long min_properties = 0, max_properties = -1;
  if (schema.contains("minProperties") && schema["minProperties"].is_number()) {
    min_properties = static_cast<long>(std::ceil(schema["minProperties"].get<double>()));
  }
  if (schema.contains("maxProperties") && schema["maxProperties"].is_number()) {
    max_properties = static_cast<long>(std::floor(schema["maxProperties"].get<double>()));
  }
  const bool need_one = min_properties == 1 && n_required == 0;
  if ((min_properties > static_cast<long>(n_required) && !need_one) ||
      (max_properties >= 0 &&
       (!extras.empty() || max_properties < static_cast<long>(members.size())))) {
    std::vector<std::string> kvs;
    std::vector<bool> required_flags;
    for (const Member& m : members) {
      kvs.push_back(m.kv);
      required_flags.push_back(m.required);
    }
    auto counted =
        counted_object(kvs, required_flags, extras, min_properties, max_properties, path);
    if (counted.ok() || counted.error().code == ErrorCode::kInvalidArgument) return counted;
    STRATA_RETURN_IF_ERROR(unenforceable(counted.error().message, path));
  }

  const std::string ws = base("ws");
  std::string extra;
  if (!extras.empty()) {
    extra = extras.size() == 1 ? extras[0] : "(" + extras[0];
    for (size_t i = 1; i < extras.size(); ++i) extra += " | " + extras[i];
    if (extras.size() > 1) extra += ")";
  }
  // after[i]: members i.. when one was already written (each starts with a comma).
  // first[i]: members i.. when none was written yet.
  const size_t n = members.size();
  std::string after = extra.empty() ? "" : "(\",\" " + ws + " " + extra + " " + ws + ")*";
  // `first` empty: the object may end here; `impossible`: it may not (need_one, no extras).
  std::string first;
  bool impossible = false;
  if (!extra.empty()) {
    first = need_one ? extra + " " + ws + " " + after : "(" + extra + " " + ws + " " + after + ")?";
  } else {
    impossible = need_one;
  }
  if (impossible && n == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "minProperties at " + path + " asks for a property where none is allowed");
  }
  for (size_t i = n; i-- > 0;) {
    const Member& m = members[i];
    std::string next_after = after;
    std::string with_comma = "\",\" " + ws + " " + m.kv + " " + ws;
    std::string after_body = m.required
                                 ? with_comma + (after.empty() ? "" : " " + after)
                                 : "(" + with_comma + ")?" + (after.empty() ? "" : " " + after);
    std::string written = m.kv + " " + ws + (after.empty() ? "" : " " + after);
    std::string first_body;
    if (m.required || impossible) {
      first_body = written;
    } else if (first.empty()) {
      first_body = "(" + written + ")?";
    } else {
      first_body = written + " | " + first;
    }
    impossible = false;
    if (i > 0) {
      after = new_rule(path + "/after");
      set_rule(after, after_body);
    }
    first = new_rule(path + "/first");
    set_rule(first, first_body);
  }
  return "\"{\" " + ws + (first.empty() ? "" : " " + first) + " \"}\"";
}

Result<std::string> Converter::array_grammar(const Json& schema, const std::string& path) {
  if (schema.contains("unevaluatedItems")) {
    STRATA_RETURN_IF_ERROR(unenforceable("'unevaluatedItems'", path));
  }
  std::vector<Json> prefix;
  Json rest = true;
  const auto read_rest = [&](const char* key) {
    if (schema.contains(key)) rest = schema[key];
  };
  if (schema.contains("prefixItems") && schema["prefixItems"].is_array()) {
    for (const Json& item : schema["prefixItems"]) prefix.push_back(item);
    read_rest("items");
  } else if (schema.contains("items") && schema["items"].is_array()) {
    for (const Json& item : schema["items"]) prefix.push_back(item);
    read_rest("additionalItems");
  } else {
    read_rest("items");
  }
  long min_items = 0, max_items = -1;
  if (schema.contains("minItems") && schema["minItems"].is_number()) {
    min_items = static_cast<long>(std::ceil(schema["minItems"].get<double>()));
  }
  if (schema.contains("maxItems") && schema["maxItems"].is_number()) {
    max_items = static_cast<long>(std::floor(schema["maxItems"].get<double>()));
  }
  const bool rest_allowed = !(rest.is_boolean() && !rest.get<bool>());
  const long k = static_cast<long>(prefix.size());
  if (!rest_allowed) max_items = max_items < 0 ? k : std::min(max_items, k);
  // A false prefix item ends the array before it.
  for (long i = 0; i < k; ++i) {
    if (prefix[i].is_boolean() && !prefix[i].get<bool>()) {
      max_items = max_items < 0 ? i : std::min(max_items, i);
    }
  }
  if (max_items >= 0 && max_items < min_items) {
    return make_error(ErrorCode::kInvalidArgument, "maxItems < minItems at " + path);
  }
  if (schema.contains("contains")) {
    const double min_contains = schema.contains("minContains") &&
                                        schema["minContains"].is_number() && draft_ >= Draft::k2019
                                    ? schema["minContains"].get<double>()
                                    : 1;
    const bool max_contains = schema.contains("maxContains") && draft_ >= Draft::k2019;
    const bool unique = schema.contains("uniqueItems") && schema["uniqueItems"] == Json(true);
    if (min_contains <= 0 && !max_contains) {
      // satisfied by every array
    } else if (min_contains == 1 && !max_contains && prefix.empty() && rest_allowed &&
               max_items < 0 && min_items <= 1 && !unique) {
      // Some item matches `contains` (and `items`), the others only `items`.
      const std::string ws = base("ws");
      STRATA_ASSIGN_OR_RETURN(std::string item, visit(rest, path + "/items"));
      STRATA_ASSIGN_OR_RETURN(
          std::string witness,
          visit(Json{{"allOf", {rest, schema["contains"]}}}, path + "/contains"));
      return "\"[\" " + ws + " (" + item + " " + ws + " \",\" " + ws + ")* " + witness + " " + ws +
             " (\",\" " + ws + " " + item + " " + ws + ")* \"]\"";
    } else {
      STRATA_RETURN_IF_ERROR(unenforceable("'contains'", path));
    }
  }
  if (schema.contains("uniqueItems") && schema["uniqueItems"].is_boolean() &&
      schema["uniqueItems"].get<bool>() && (max_items < 0 || max_items > 1)) {
    auto unique = prefix.empty() ? unique_array(rest, min_items, max_items, path)
                                 : Result<std::string>(make_error(
                                       ErrorCode::kUnsupported, "'uniqueItems' with prefixItems"));
    if (unique.ok() || unique.error().code == ErrorCode::kInvalidArgument) return unique;
    STRATA_RETURN_IF_ERROR(unenforceable("'uniqueItems' (" + unique.error().message + ")", path));
  }
  constexpr long kMaxRepeat = 10000;
  if (min_items > kMaxRepeat || max_items > kMaxRepeat) {
    STRATA_RETURN_IF_ERROR(unenforceable("an item count bound above 10000", path));
    min_items = std::min(min_items, kMaxRepeat);
    if (max_items > kMaxRepeat) max_items = -1;
  }
  const std::string ws = base("ws");
  std::vector<std::string> items;
  const long used_prefix = max_items < 0 ? k : std::min(k, max_items);
  for (long i = 0; i < used_prefix; ++i) {
    STRATA_ASSIGN_OR_RETURN(std::string item,
                            visit(prefix[i], path + "/items/" + std::to_string(i)));
    items.push_back(item);
  }
  std::string rest_item;
  const bool more = rest_allowed && (max_items < 0 || max_items > k);
  if (more) {
    STRATA_ASSIGN_OR_RETURN(rest_item, visit(rest, path + "/items"));
  }
  if (max_items == 0) return "\"[\" " + ws + " \"]\"";
  // tail: items after the prefix, when at least one item was written.
  std::string tail;
  if (more) {
    const long lo = std::max(0L, min_items - k);
    const long hi = max_items < 0 ? -1 : max_items - k;
    tail = "(\",\" " + ws + " " + rest_item + " " + ws + ")" + repeat_suffix(lo, hi);
  }
  std::string body;
  if (used_prefix == 0) {
    // All items alike: item ("," item){min-1, max-1}.
    const long lo = std::max(0L, min_items - 1);
    const long hi = max_items < 0 ? -1 : max_items - 1;
    std::string seq = rest_item + " " + ws;
    if (hi != 0) seq += " (\",\" " + ws + " " + rest_item + " " + ws + ")" + repeat_suffix(lo, hi);
    body = min_items > 0 ? seq : "(" + seq + ")?";
  } else {
    std::string after = tail;
    for (long i = used_prefix - 1; i >= 1; --i) {
      std::string step =
          "\",\" " + ws + " " + items[i] + " " + ws + (after.empty() ? "" : " " + after);
      after = i < min_items ? "(" + step + ")" : "(" + step + ")?";
    }
    std::string seq = items[0] + " " + ws + (after.empty() ? "" : " " + after);
    body = min_items > 0 ? seq : "(" + seq + ")?";
  }
  return "\"[\" " + ws + " " + body + " \"]\"";
}

Result<const Json*> Converter::resolve_ref(const std::string& ref, const std::string& path) {
  const size_t hash = ref.find('#');
  const std::string base_uri = ref.substr(0, hash);
  const std::string fragment = hash == std::string::npos ? "" : ref.substr(hash + 1);
  const Json* doc = &root_;
  if (!base_uri.empty()) {
    doc = nullptr;
    for (const auto& [id, schema] : ids_) {
      const std::string id_base = id.substr(0, id.find('#'));
      if (id_base.empty()) continue;
      const bool same =
          id_base == base_uri ||
          (id_base.size() > base_uri.size() &&
           id_base.compare(id_base.size() - base_uri.size(), base_uri.size(), base_uri) == 0 &&
           id_base[id_base.size() - base_uri.size() - 1] == '/');
      if (same) {
        doc = schema;
        break;
      }
    }
    if (!doc) {
      return make_error(ErrorCode::kUnsupported,
                        "$ref '" + ref + "' at " + path +
                            " is remote; only local references "
                            "(#/definitions/..., #/$defs/..., #) are supported");
    }
  }
  if (fragment.empty()) return doc;
  if (fragment[0] != '/') {
    auto it = ids_.find("#" + fragment);
    if (it == ids_.end()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "$ref '" + ref + "' at " + path + " names an unknown anchor");
    }
    return it->second;
  }
  const Json* node = doc;
  size_t start = 1;
  while (start <= fragment.size()) {
    size_t end = fragment.find('/', start);
    if (end == std::string::npos) end = fragment.size();
    const std::string token = pointer_decode(fragment.substr(start, end - start));
    if (node->is_object() && node->contains(token)) {
      node = &(*node)[token];
    } else if (node->is_array() && !token.empty() &&
               std::all_of(token.begin(), token.end(), ::isdigit) &&
               std::stoul(token) < node->size()) {
      node = &(*node)[std::stoul(token)];
    } else {
      return make_error(ErrorCode::kUnsupported,
                        "$ref '" + ref + "' at " + path + " points to nothing in the schema " +
                            "(references relative to a nested $id are not supported)");
    }
    start = end + 1;
  }
  return node;
}

Result<Json> Converter::inline_ref(const Json& schema, const std::string& path) {
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return Json::object();
    return make_error(ErrorCode::kInvalidArgument, "allOf at " + path + " contains false");
  }
  if (!schema.is_object() || !schema.contains("$ref") || !schema["$ref"].is_string()) return schema;
  if (++depth_ > 200) {
    --depth_;
    return make_error(ErrorCode::kUnsupported, "$ref chain too deep (recursive allOf?) at " + path);
  }
  const std::string ref = schema["$ref"].get<std::string>();
  auto target = resolve_ref(ref, path);
  Result<Json> out = target.ok() ? inline_ref(**target, ref) : Result<Json>(target.error());
  if (out.ok() && draft_ >= Draft::k2019) {
    Json rest = schema;
    rest.erase("$ref");
    if (has_validation_keywords(rest)) out = merge(*out, rest, path);
  }
  --depth_;
  return out;
}

Result<Json> Converter::merge(const Json& a_in, const Json& b_in, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(Json a, inline_ref(a_in, path));
  STRATA_ASSIGN_OR_RETURN(Json b, inline_ref(b_in, path));
  if (!a.is_object() || !b.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, "allOf at " + path + " holds a non-schema");
  }
  for (int side = 0; side < 2; ++side) {
    const Json& x = side == 0 ? a : b;
    const Json& y = side == 0 ? b : a;
    const bool x_limits_others =
        (x.contains("additionalProperties") && x["additionalProperties"] != Json(true)) ||
        (x.contains("additionalItems") && x["additionalItems"] != Json(true)) ||
        (x.contains("items") && x.contains("prefixItems"));
    // Properties only y declares get x's additionalProperties below; patterns cannot.
    const bool y_declares = (y.contains("patternProperties") &&
                             y["patternProperties"] != x.value("patternProperties", Json())) ||
                            y.contains("prefixItems") ||
                            (y.contains("items") && y["items"].is_array());
    if (x_limits_others && y_declares) {
      STRATA_RETURN_IF_ERROR(
          unenforceable("allOf whose branches declare properties or items next to another branch's "
                        "additionalProperties/additionalItems/items",
                        path));
    }
  }
  // A property one side declares is, for the other side, additional unless a pattern of it
  // matches the name: it must satisfy that side's additionalProperties too.
  for (int side = 0; side < 2; ++side) {
    const Json& x = side == 0 ? b : a;
    Json& y = side == 0 ? a : b;
    if (!x.contains("additionalProperties") || x["additionalProperties"] == Json(true) ||
        !y.contains("properties") || !y["properties"].is_object()) {
      continue;
    }
    for (auto& [name, sub] : y["properties"].items()) {
      if (x.contains("properties") && x["properties"].is_object() &&
          x["properties"].contains(name)) {
        continue;
      }
      bool matched = false;
      if (x.contains("patternProperties") && x["patternProperties"].is_object()) {
        for (const auto& [pattern, unused] : x["patternProperties"].items()) {
          std::optional<bool> match = regex_search(pattern, name);
          if (!match) {
            STRATA_RETURN_IF_ERROR(unenforceable("patternProperties '" + pattern + "'", path));
          }
          matched |= match.value_or(false);
        }
      }
      if (!matched) sub = Json{{"allOf", {sub, x["additionalProperties"]}}};
    }
  }
  // Conditionals of both sides cannot share one key: b's go into allOf.
  Json conditionals = Json::object();
  for (const char* key :
       {"not", "if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas"}) {
    if (a.contains(key) && b.contains(key) && a[key] != b[key]) {
      for (const char* moved :
           {"not", "if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas"}) {
        if (b.contains(moved)) {
          conditionals[moved] = b[moved];
          b.erase(moved);
        }
      }
      break;
    }
  }
  Json out = a;
  if (!conditionals.empty()) {
    if (!out.contains("allOf") || !out["allOf"].is_array()) out["allOf"] = Json::array();
    out["allOf"].push_back(conditionals);
  }
  for (const auto& [key, value] : b.items()) {
    if (!out.contains(key)) {
      out[key] = value;
      continue;
    }
    Json& current = out[key];
    if (current == value) continue;
    if (key == "properties" || key == "patternProperties") {
      if (!current.is_object() || !value.is_object()) continue;
      for (const auto& [name, sub] : value.items()) {
        current[name] = current.contains(name) ? Json{{"allOf", {current[name], sub}}} : sub;
      }
    } else if (key == "required") {
      for (const Json& name : value) {
        if (std::find(current.begin(), current.end(), name) == current.end())
          current.push_back(name);
      }
    } else if (key == "type") {
      const auto as_list = [](const Json& t) { return t.is_array() ? t : Json::array({t}); };
      Json both = Json::array();
      for (const Json& x : as_list(current)) {
        for (const Json& y : as_list(value)) {
          if (x == y)
            both.push_back(x);
          else if (x == "number" && y == "integer")
            both.push_back(y);
          else if (x == "integer" && y == "number")
            both.push_back(x);
        }
      }
      if (both.empty()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "allOf at " + path + " asks for types that do not overlap");
      }
      current = both;
    } else if ((key == "minimum" || key == "minLength" || key == "minItems") &&
               current.is_number() && value.is_number()) {
      if (value.get<double>() > current.get<double>()) current = value;
    } else if ((key == "maximum" || key == "maxLength" || key == "maxItems") &&
               current.is_number() && value.is_number()) {
      if (value.get<double>() < current.get<double>()) current = value;
    } else if (key == "enum" && current.is_array() && value.is_array()) {
      Json both = Json::array();
      for (const Json& x : current) {
        if (std::find(value.begin(), value.end(), x) != value.end()) both.push_back(x);
      }
      current = both;
    } else if ((key == "anyOf" || key == "oneOf") && current.is_array() && value.is_array()) {
      if (current.size() * value.size() > 64) {
        STRATA_RETURN_IF_ERROR(unenforceable("allOf of two large anyOf/oneOf lists", path));
        continue;
      }
      Json product = Json::array();
      for (const Json& x : current) {
        for (const Json& y : value) product.push_back(Json{{"allOf", {x, y}}});
      }
      current = product;
    } else if (key == "allOf" && current.is_array() && value.is_array()) {
      for (const Json& sub : value) current.push_back(sub);
    } else if (key == "additionalProperties" || key == "items" || key == "additionalItems") {
      if (current.is_boolean() && current.get<bool>()) {
        current = value;
      } else if (current.is_boolean() || (value.is_boolean() && value.get<bool>())) {
        // false stays false; true adds nothing
      } else if (value.is_boolean()) {
        current = value;
      } else if (current.is_object() && value.is_object()) {
        current = Json{{"allOf", {current, value}}};
      } else {
        STRATA_RETURN_IF_ERROR(unenforceable("allOf of two tuple 'items'", path));
      }
    } else if ((key == "$strata:notEnum" || key == "$strata:notPattern") && current.is_array() &&
               value.is_array()) {
      for (const Json& item : value) current.push_back(item);
    } else if (key == "const") {
      return make_error(ErrorCode::kInvalidArgument,
                        "allOf at " + path + " asks for two different constants");
    } else if (key == "uniqueItems") {
      current =
          current.is_boolean() && value.is_boolean() && (current.get<bool>() || value.get<bool>());
    } else if (is_validation_keyword(key)) {
      STRATA_RETURN_IF_ERROR(
          unenforceable("allOf combining two different '" + key + "' values", path));
    }
  }
  return out;
}

}  // namespace strata::grammar::json_schema_detail
