// JSON Schema to GBNF: references and allOf. $ref resolution (JSON pointers, $id, $anchor),
// inlining a $ref with its siblings (in every draft), and merging two schemas into one that asks
// for both.
#include <algorithm>
#include <regex>

#include "grammar/json_schema_converter.h"
#include "grammar/regex_to_gbnf_charset.h"

namespace strata::grammar::json_schema_detail {
namespace {

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

}  // namespace

// Whether `text` matches the ECMA-262 `pattern` anywhere (JSON Schema's pattern semantics);
// nullopt when std::regex cannot compile it.
std::optional<bool> regex_search(const std::string& pattern, const std::string& text) {
  // libstdc++ parses groups and matches (depth-first, one frame per character step) by
  // recursion: a pattern nested thousands deep or a name of 10,000 characters overflows a 1 MiB
  // stack. Longer names are left to the caller's "cannot be enforced" path.
  constexpr size_t kMaxText = 1000;
  if (text.size() > kMaxText || !regex_detail::check_group_nesting(pattern).ok()) {
    return std::nullopt;
  }
  try {
    return std::regex_search(text, std::regex(pattern, std::regex::ECMAScript));
  } catch (const std::regex_error&) {
    return std::nullopt;
  }
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
  // Siblings of $ref apply in every draft (as ajv applies them; see visit_body).
  if (out.ok()) {
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
    } else if (key == "pattern" && current.is_string() && value.is_string()) {
      // Both hold: the string automaton intersects every pattern (`$strata:patterns`).
      if (!out.contains("$strata:patterns")) out["$strata:patterns"] = Json::array();
      Json& more = out["$strata:patterns"];
      if (std::find(more.begin(), more.end(), value) == more.end()) more.push_back(value);
    } else if ((key == "$strata:notEnum" || key == "$strata:notPattern" ||
                key == "$strata:patterns" || key == "$strata:someKeyOutside") &&
               current.is_array() && value.is_array()) {
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
