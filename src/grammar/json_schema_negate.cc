// JSON Schema to GBNF: the keywords that say what a value must not be, rewritten into schemas
// the grammar enforces directly.
//
//   not S                   -> negate(S)
//   if I then T else E      -> anyOf [allOf [I, T], allOf [negate(I), E]]   (the two disjoint)
//   dependentRequired A: R  -> anyOf [not an object, object without A, object with A and R]
//   dependentSchemas A: S   -> anyOf [not an object, object without A, allOf [object with A, S]]
//   oneOf branch i          -> allOf [branch i, negate(branch j) for every j it may overlap]
//   not additionalProperties: A, beside properties P -> an object with a member outside P
//                             whose value fails A (`$strata:someKeyOutside`)
//
// negate() is exact for a schema built from keywords whose complement is again a schema: a
// conjunction of keywords fails when one keyword fails, so the negation is the anyOf of the
// keywords' negations. A keyword constrains only values of its own type (`pattern` passes any
// non-string), so its negation names that type: not {pattern: P} is a string that P does not
// match. Internal keywords carry what JSON Schema cannot write directly: `$strata:notEnum`
// (none of these values), `$strata:notPattern` (a string none of these patterns match: a
// known `format` is one) and `$strata:notInteger` (a number with a non-zero fraction).
#include <algorithm>
#include <cmath>
#include <set>

#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_internal.h"

namespace strata::grammar::json_schema_detail {
namespace {

const std::vector<std::string> kJsonTypes = {"null",  "boolean", "object",
                                             "array", "string",  "number"};

// The declared types of a `type` keyword ("integer" kept as written).
std::vector<std::string> declared_types(const Json& type) {
  std::vector<std::string> out;
  if (type.is_string()) out.push_back(type.get<std::string>());
  if (type.is_array()) {
    for (const Json& t : type) {
      if (t.is_string()) out.push_back(t.get<std::string>());
    }
  }
  return out;
}

Json typed(const char* type, Json schema) {
  schema["type"] = type;
  return schema;
}

Json all_types_but(const std::string& type) {
  Json out = Json::array();
  for (const std::string& t : kJsonTypes) {
    if (t != type) out.push_back(t);
  }
  return out;
}

// The type whose size a min/max keyword counts: Length, Items or Properties.
const char* counted_type(const std::string& kind) {
  if (kind == "Length") return "string";
  return kind == "Items" ? "array" : "object";
}

bool is_annotation_only(const Json& schema) {
  if (!schema.is_object()) return false;
  for (const auto& [key, value] : schema.items()) {
    if (is_validation_keyword(key)) return false;
  }
  return true;
}

}  // namespace

Result<Json> Converter::negate(const Json& schema_in, const std::string& path, int depth) {
  if (depth > 8) return make_error(ErrorCode::kUnsupported, "'not' nested too deeply at " + path);
  if (schema_in.is_boolean()) return Json(!schema_in.get<bool>());
  if (!schema_in.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, "the schema at " + path + " is not an object");
  }
  STRATA_ASSIGN_OR_RETURN(Json schema, inline_ref(schema_in, path));
  if (is_annotation_only(schema)) return Json(false);
  const auto unsupported = [&](const std::string& key) -> Error {
    return make_error(ErrorCode::kUnsupported,
                      "'not' of '" + key + "' at " + path + " cannot be enforced by a grammar");
  };
  // Draft 4 writes exclusive bounds as booleans next to minimum/maximum.
  const auto exclusive_flag = [&](const char* key) {
    return schema.contains(key) && schema[key].is_boolean() && schema[key].get<bool>();
  };
  Json alternatives = Json::array();
  for (const auto& [key, value] : schema.items()) {
    if (!is_validation_keyword(key)) continue;
    if (key == "type") {
      std::vector<std::string> types = declared_types(value);
      const bool integer_only = std::count(types.begin(), types.end(), "integer") &&
                                !std::count(types.begin(), types.end(), "number");
      Json rest = Json::array();
      for (const std::string& t : kJsonTypes) {
        if (!std::count(types.begin(), types.end(), t) && !(integer_only && t == "number")) {
          rest.push_back(t);
        }
      }
      if (!rest.empty()) alternatives.push_back(Json{{"type", rest}});
      // The complement of integer within numbers: 1.5, not 1 or 1.0.
      if (integer_only) alternatives.push_back(typed("number", Json{{"$strata:notInteger", true}}));
    } else if (key == "$strata:notInteger") {
      alternatives.push_back(Json{{"type", "integer"}});
    } else if (key == "enum" || key == "const") {
      alternatives.push_back(
          Json{{"$strata:notEnum", key == "const" ? Json::array({value}) : value}});
    } else if (key == "$strata:notEnum") {
      alternatives.push_back(Json{{"enum", value}});
    } else if (key == "required" && value.is_array()) {
      for (const Json& name : value) {
        if (!name.is_string()) continue;
        alternatives.push_back(
            Json{{"type", "object"}, {"properties", {{name.get<std::string>(), false}}}});
      }
    } else if (key == "properties" && value.is_object()) {
      for (const auto& [name, sub] : value.items()) {
        STRATA_ASSIGN_OR_RETURN(Json negated, negate(sub, path + "/properties/" + name, depth + 1));
        if (negated.is_boolean() && !negated.get<bool>()) continue;
        alternatives.push_back(Json{{"type", "object"},
                                    {"required", Json::array({name})},
                                    {"properties", {{name, negated}}}});
      }
    } else if (key == "additionalProperties") {
      // A member that neither properties nor patternProperties names fails the schema.
      STRATA_ASSIGN_OR_RETURN(Json negated,
                              negate(value, path + "/additionalProperties", depth + 1));
      if (negated.is_boolean() && !negated.get<bool>()) continue;
      Json names = Json::array(), patterns = Json::array();
      if (schema.contains("properties") && schema["properties"].is_object()) {
        for (const auto& [name, unused] : schema["properties"].items()) names.push_back(name);
      }
      if (schema.contains("patternProperties") && schema["patternProperties"].is_object()) {
        for (const auto& [pattern, unused] : schema["patternProperties"].items()) {
          patterns.push_back(pattern);
        }
      }
      alternatives.push_back(
          Json{{"type", "object"},
               {"$strata:someKeyOutside",
                Json::array({{{"names", names}, {"patterns", patterns}, {"schema", negated}}})}});
    } else if (key == "pattern" && value.is_string()) {
      alternatives.push_back(typed("string", Json{{"$strata:notPattern", Json::array({value})}}));
    } else if (key == "format" && value.is_string()) {
      // A known format is a pattern (json_schema_formats.cc); one the grammar does not know
      // constrains nothing, so its negation adds no alternative.
      bool unenforced = false;
      std::optional<std::string> regex = format_regex(value.get<std::string>(), &unenforced);
      if (unenforced) return unsupported(key);
      if (!regex) continue;
      alternatives.push_back(typed("string", Json{{"$strata:notPattern", Json::array({*regex})}}));
    } else if (key == "$strata:patterns" && value.is_array()) {
      for (const Json& pattern : value) {
        alternatives.push_back(
            typed("string", Json{{"$strata:notPattern", Json::array({pattern})}}));
      }
    } else if (key == "$strata:notPattern" && value.is_array()) {
      for (const Json& pattern : value) {
        alternatives.push_back(typed("string", Json{{"pattern", pattern}}));
      }
    } else if ((key == "minLength" || key == "minItems" || key == "minProperties") &&
               value.is_number()) {
      const double n = std::ceil(value.get<double>());
      if (n <= 0) continue;
      const std::string kind = key.substr(3);  // Length, Items, Properties
      alternatives.push_back(typed(counted_type(kind), Json{{"max" + kind, n - 1}}));
    } else if ((key == "maxLength" || key == "maxItems" || key == "maxProperties") &&
               value.is_number()) {
      const double n = std::floor(value.get<double>());
      const std::string kind = key.substr(3);
      alternatives.push_back(typed(counted_type(kind), Json{{"min" + kind, n + 1}}));
    } else if ((key == "minimum" || key == "maximum") && value.is_number()) {
      const bool lower = key == "minimum";
      const bool exclusive = exclusive_flag(lower ? "exclusiveMinimum" : "exclusiveMaximum");
      // not (x >= m) is x < m; not (x > m) is x <= m.
      const char* opposite = lower ? (exclusive ? "maximum" : "exclusiveMaximum")
                                   : (exclusive ? "minimum" : "exclusiveMinimum");
      alternatives.push_back(typed("number", Json{{opposite, value}}));
    } else if ((key == "exclusiveMinimum" || key == "exclusiveMaximum")) {
      if (value.is_boolean()) continue;  // draft 4: read with minimum/maximum
      if (!value.is_number()) continue;
      const char* opposite = key == "exclusiveMinimum" ? "maximum" : "minimum";
      alternatives.push_back(typed("number", Json{{opposite, value}}));
    } else if (key == "anyOf" && value.is_array()) {
      Json all = Json::array();
      for (size_t i = 0; i < value.size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(Json negated,
                                negate(value[i], path + "/anyOf/" + std::to_string(i), depth + 1));
        all.push_back(negated);
      }
      alternatives.push_back(Json{{"allOf", all}});
    } else if (key == "allOf" && value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(Json negated,
                                negate(value[i], path + "/allOf/" + std::to_string(i), depth + 1));
        if (negated.is_boolean() && !negated.get<bool>()) continue;
        alternatives.push_back(negated);
      }
    } else if (key == "contains" && !schema.contains("minContains") &&
               !schema.contains("maxContains")) {
      // Every item fails `contains`.
      STRATA_ASSIGN_OR_RETURN(Json negated, negate(value, path + "/contains", depth + 1));
      alternatives.push_back(typed("array", Json{{"items", negated}}));
    } else if (key == "oneOf" && value.is_array() && value.size() <= 4) {
      // No branch matches, or at least two do.
      Json none = Json::array();
      for (size_t i = 0; i < value.size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(Json negated,
                                negate(value[i], path + "/oneOf/" + std::to_string(i), depth + 1));
        none.push_back(negated);
      }
      alternatives.push_back(Json{{"allOf", none}});
      for (size_t i = 0; i < value.size(); ++i) {
        for (size_t j = i + 1; j < value.size(); ++j) {
          alternatives.push_back(Json{{"allOf", {value[i], value[j]}}});
        }
      }
    } else if (key == "items" && (value.is_object() || value.is_boolean()) &&
               !schema.contains("prefixItems")) {
      // Some item fails `items`.
      STRATA_ASSIGN_OR_RETURN(Json negated, negate(value, path + "/items", depth + 1));
      if (negated.is_boolean() && !negated.get<bool>()) continue;
      alternatives.push_back(typed("array", Json{{"contains", negated}}));
    } else if (key == "not") {
      if (!(value.is_boolean() && value.get<bool>())) alternatives.push_back(value);
    } else {
      return unsupported(key);
    }
  }
  if (alternatives.empty()) return Json(false);
  if (alternatives.size() == 1) return alternatives[0];
  return Json{{"anyOf", alternatives}};
}

Result<Json> Converter::rewrite_conditionals(const Json& schema, const std::string& path) {
  Json out = schema;
  Json extra = Json::array();
  if (out.contains("not")) {
    auto negated = negate(out["not"], path + "/not", 0);
    out.erase("not");
    if (negated.ok()) {
      extra.push_back(*negated);
    } else if (negated.error().code != ErrorCode::kUnsupported) {
      return negated.error();
    } else {
      STRATA_RETURN_IF_ERROR(unenforceable("'not' (" + negated.error().message + ")", path));
    }
  }
  if (out.contains("if")) {
    const Json condition = out["if"];
    const Json then_schema = out.contains("then") ? out["then"] : Json(true);
    const Json else_schema = out.contains("else") ? out["else"] : Json(true);
    out.erase("if");
    out.erase("then");
    out.erase("else");
    auto negated = negate(condition, path + "/if", 0);
    if (negated.ok()) {
      extra.push_back(Json{
          {"anyOf",
           {Json{{"allOf", {condition, then_schema}}}, Json{{"allOf", {*negated, else_schema}}}}}});
    } else if (negated.error().code != ErrorCode::kUnsupported) {
      return negated.error();
    } else {
      STRATA_RETURN_IF_ERROR(unenforceable("'if' (" + negated.error().message + ")", path));
    }
  }
  // dependencies (drafts 4-7) holds both forms; 2019-09 split it in two.
  const auto add_dependency = [&](const std::string& name, const Json& then_schema) {
    extra.push_back(Json{
        {"anyOf",
         {Json{{"type", all_types_but("object")}},
          Json{{"type", "object"}, {"properties", {{name, false}}}},
          Json{{"allOf",
                {Json{{"type", "object"}, {"required", Json::array({name})}}, then_schema}}}}}});
  };
  for (const char* keyword : {"dependencies", "dependentRequired", "dependentSchemas"}) {
    if (!out.contains(keyword)) continue;
    const Json dependencies = out[keyword];
    out.erase(keyword);
    if (!dependencies.is_object()) continue;
    for (const auto& [name, dependency] : dependencies.items()) {
      if (dependency.is_array()) {
        add_dependency(name, Json{{"required", dependency}});
      } else if (dependency.is_object() || dependency.is_boolean()) {
        add_dependency(name, dependency);
      }
    }
  }
  if (extra.empty()) return out;
  if (!out.contains("allOf") || !out["allOf"].is_array()) out["allOf"] = Json::array();
  for (Json& piece : extra) out["allOf"].push_back(std::move(piece));
  return out;
}

Result<std::string> Converter::exclusive_branch(const Json& branch, const std::vector<Json>& raw,
                                                size_t i, const std::vector<size_t>& overlapping,
                                                const std::string& path) {
  // `branch` already holds the schema's other keywords, so excluding the other branches as
  // written is enough.
  const std::vector<Json>& branches = raw;
  Json all = Json::array({branch});
  for (size_t j : overlapping) {
    auto negated = negate(branches[j], path, 0);
    if (!negated.ok()) {
      if (negated.error().code != ErrorCode::kUnsupported) return negated.error();
      return make_error(ErrorCode::kUnsupported,
                        "'oneOf' whose branches " + std::to_string(i) + " and " +
                            std::to_string(j) + " can both match at " + path +
                            " cannot be enforced by a grammar (" + negated.error().message + ")");
    }
    all.push_back(std::move(negated).value());
  }
  return visit(Json{{"allOf", all}}, path + "/oneOf/" + std::to_string(i));
}

Result<std::string> Converter::object_with_key_outside(const Json& schema,
                                                       const std::string& path) {
  // One requirement at a time: the others stay in `rest` for the ways below to meet.
  const Json& specs = schema["$strata:someKeyOutside"];
  if (!specs.is_array() || specs.empty() || !specs[0].is_object() || !specs[0].contains("schema")) {
    return make_error(ErrorCode::kInternal, "malformed $strata:someKeyOutside at " + path);
  }
  const Json& spec = specs[0];
  Json rest = schema;
  rest["$strata:someKeyOutside"].erase(0);
  if (rest["$strata:someKeyOutside"].empty()) rest.erase("$strata:someKeyOutside");
  const Json& value_schema = spec["schema"];
  std::set<std::string> names;
  for (const Json& name : spec.value("names", Json::array())) names.insert(name.get<std::string>());
  const Json patterns = spec.value("patterns", Json::array());
  // Whether a member named `name` counts: outside the negated schema's names and patterns.
  const auto outside = [&](const std::string& name) -> Result<bool> {
    if (names.count(name)) return false;
    for (const Json& pattern : patterns) {
      std::optional<bool> match = regex_search(pattern.get<std::string>(), name);
      if (!match) {
        return make_error(ErrorCode::kUnsupported, "patternProperties '" +
                                                       pattern.get<std::string>() + "' at " + path +
                                                       " cannot be enforced by a grammar");
      }
      if (*match) return false;
    }
    return true;
  };
  const Json empty = Json::object();
  const Json& properties =
      rest.contains("properties") && rest["properties"].is_object() ? rest["properties"] : empty;
  const Json additional = rest.value("additionalProperties", Json(true));
  const bool open = !(additional.is_boolean() && !additional.get<bool>());
  const bool has_patterns = rest.contains("patternProperties") || rest.contains("propertyNames");
  Json ways = Json::array();
  // A declared property, now required and failing the negated schema too.
  for (const auto& [name, sub] : properties.items()) {
    STRATA_ASSIGN_OR_RETURN(bool counts, outside(name));
    if (!counts) continue;
    Json way = rest;
    if (!way.contains("required") || !way["required"].is_array()) way["required"] = Json::array();
    if (std::find(way["required"].begin(), way["required"].end(), name) == way["required"].end()) {
      way["required"].push_back(name);
    }
    way["properties"][name] = Json{{"allOf", {sub, value_schema}}};
    ways.push_back(std::move(way));
  }
  if (open) {
    if (has_patterns || !patterns.empty() || rest.contains("$strata:oneExtra")) {
      STRATA_RETURN_IF_ERROR(unenforceable(
          "'not' of 'additionalProperties' next to patternProperties (or of two)", path));
    } else {
      // A required name no property declares is an additional member.
      if (rest.contains("required") && rest["required"].is_array()) {
        for (const Json& name : rest["required"]) {
          if (!name.is_string() || properties.contains(name.get<std::string>())) continue;
          STRATA_ASSIGN_OR_RETURN(bool counts, outside(name.get<std::string>()));
          if (!counts) continue;
          Json way = rest;
          way["properties"][name.get<std::string>()] = Json{{"allOf", {additional, value_schema}}};
          ways.push_back(std::move(way));
        }
      }
      Json way = rest;
      way["$strata:oneExtra"] =
          Json{{"names", Json(std::vector<std::string>(names.begin(), names.end()))},
               {"schema", Json{{"allOf", {additional, value_schema}}}}};
      ways.push_back(std::move(way));
    }
  }
  if (ways.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "no object at " + path + " has a member outside the names it excludes");
  }
  return visit(ways.size() == 1 ? ways[0] : Json{{"anyOf", ways}}, path);
}

}  // namespace strata::grammar::json_schema_detail
