// JSON Schema to GBNF: the keywords that say what a value must not be, rewritten into schemas
// the grammar enforces directly.
//
//   not S                   -> negate(S)
//   if I then T else E      -> anyOf [allOf [I, T], allOf [negate(I), E]]   (the two disjoint)
//   dependentRequired A: R  -> anyOf [not an object, object without A, object with A and R]
//   dependentSchemas A: S   -> anyOf [not an object, object without A, allOf [object with A, S]]
//   oneOf branch i          -> allOf [branch i, negate(branch j) for every j it may overlap]
//
// negate() is exact for a schema built from keywords whose complement is again a schema: a
// conjunction of keywords fails when one keyword fails, so the negation is the anyOf of the
// keywords' negations. A keyword constrains only values of its own type (`pattern` passes any
// non-string), so its negation names that type: not {pattern: P} is a string that P does not
// match. Internal keywords carry what JSON Schema cannot write directly: `$strata:notEnum`
// (none of these values), `$strata:notPattern` (a string none of these patterns match) and
// `$strata:notInteger` (a number with a non-zero fraction).
#include <algorithm>
#include <cmath>

#include "grammar/json_schema_converter.h"

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
    } else if (key == "pattern" && value.is_string()) {
      alternatives.push_back(typed("string", Json{{"$strata:notPattern", Json::array({value})}}));
    } else if (key == "$strata:notPattern" && value.is_array()) {
      for (const Json& pattern : value) {
        alternatives.push_back(typed("string", Json{{"pattern", pattern}}));
      }
    } else if ((key == "minLength" || key == "minItems") && value.is_number()) {
      const double n = std::ceil(value.get<double>());
      if (n <= 0) continue;
      alternatives.push_back(typed(key == "minLength" ? "string" : "array",
                                   Json{{key == "minLength" ? "maxLength" : "maxItems", n - 1}}));
    } else if ((key == "maxLength" || key == "maxItems") && value.is_number()) {
      const double n = std::floor(value.get<double>());
      alternatives.push_back(typed(key == "maxLength" ? "string" : "array",
                                   Json{{key == "maxLength" ? "minLength" : "minItems", n + 1}}));
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

}  // namespace strata::grammar::json_schema_detail
