// JSON Schema to GBNF: objects and arrays.
//
// An object's keys come in one fixed order: the schema's `properties` in their order (required
// ones always, optional ones skippable), then any additional keys. A chain of rules tracks
// whether a key was already written, so commas land only between members.
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_set>

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

}  // namespace

Result<std::string> Converter::object_grammar(const Json& schema, const std::string& path) {
  if (schema.contains("$strata:someKeyOutside")) return object_with_key_outside(schema, path);
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
  // Names are looked up in hash sets: an object of 100,000 required properties would cost
  // 10^10 string comparisons with linear searches (and ordered_json's find is linear too).
  std::vector<std::string> required;
  std::unordered_set<std::string> required_set;
  if (schema.contains("required") && schema["required"].is_array()) {
    for (const Json& name : schema["required"]) {
      if (name.is_string() && required_set.insert(name.get<std::string>()).second) {
        required.push_back(name.get<std::string>());
      }
    }
  }
  std::unordered_set<std::string> declared_set;
  for (auto it = properties.begin(); it != properties.end(); ++it) declared_set.insert(it.key());
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
    const bool is_required = required_set.count(name) > 0;
    STRATA_ASSIGN_OR_RETURN(Json effective, member_schema(name, &sub));
    STRATA_RETURN_IF_ERROR(add_member(name, effective, is_required));
  }
  for (const std::string& name : required) {
    if (declared_set.count(name)) continue;
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
  // `$strata:oneExtra` {names, schema} (object_with_key_outside): one more member, whose key is
  // neither declared nor in `names` and whose value satisfies `schema` and additionalProperties.
  std::string one_extra;
  if (schema.contains("$strata:oneExtra") && !extras.empty()) {
    const Json& spec = schema["$strata:oneExtra"];
    if (!patterns.empty() || key_filter) {
      return make_error(ErrorCode::kUnsupported,
                        "'not' of 'additionalProperties' next to "
                        "patternProperties at " +
                            path + " cannot be enforced by a grammar");
    }
    std::vector<std::string> taken = declared_names;
    for (const Json& name : spec["names"]) taken.push_back(name.get<std::string>());
    STRATA_ASSIGN_OR_RETURN(std::string key, key_not_in(taken, path));
    STRATA_ASSIGN_OR_RETURN(std::string value,
                            visit(spec["schema"], path + "/additionalProperties"));
    one_extra = key + " " + base("ws") + " \":\" ws " + value;
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
    if (!one_extra.empty()) {
      return make_error(ErrorCode::kUnsupported,
                        "'not' of 'additionalProperties' with minProperties/maxProperties at " +
                            path + " cannot be enforced by a grammar");
    }
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
  if (!one_extra.empty()) {
    // The extras must write `one_extra` once: `need` is the tail before it, `after` after it.
    const std::string need = new_rule(path + "/need");
    set_rule(need, "\",\" " + ws + " (" + extra + " " + ws + " " + need + " | " + one_extra + " " +
                       ws + " " + after + ")");
    first = "(" + extra + " " + ws + " " + need + " | " + one_extra + " " + ws + " " + after + ")";
    after = need;
  } else if (!extra.empty()) {
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
  // uniqueItems: over a small finite set of values the grammar counts them itself; otherwise
  // the array's rule is a unique-array rule and the matcher refuses a repeated item
  // (unique_items.h).
  bool unique_rule = false;
  if (schema.contains("uniqueItems") && schema["uniqueItems"].is_boolean() &&
      schema["uniqueItems"].get<bool>() && (max_items < 0 || max_items > 1)) {
    if (prefix.empty()) {
      auto unique = unique_array(rest, min_items, max_items, path);
      if (unique.ok() || unique.error().code == ErrorCode::kInvalidArgument) return unique;
    }
    unique_rule = true;
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
  std::string array = "\"[\" " + ws + " " + body + " \"]\"";
  if (!unique_rule) return array;
  const std::string name = new_unique_array_rule();
  set_rule(name, std::move(array));
  return name;
}

}  // namespace strata::grammar::json_schema_detail
