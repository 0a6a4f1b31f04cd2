// JSON Schema to GBNF: whether two schemas can share a value (oneOf needs branches that cannot,
// or narrows them until they cannot). Conservative: "disjoint" only when types, const/enum
// values, or a property one side requires and the other forbids or types apart prove it.
#include <algorithm>
#include <optional>
#include <set>

#include "grammar/json_schema_converter.h"

namespace strata::grammar::json_schema_detail {
namespace {

// The types a schema admits, as far as its own keywords say ("integer" inside "number").
std::set<std::string> possible_types(const Json& schema) {
  std::set<std::string> types;
  const Json* values = nullptr;
  Json single;
  if (schema.is_object() && schema.contains("const")) {
    single = Json::array({schema["const"]});
    values = &single;
  } else if (schema.is_object() && schema.contains("enum") && schema["enum"].is_array()) {
    values = &schema["enum"];
  }
  std::vector<std::string> declared = schema.is_object() ? type_list(schema) : kAllTypes;
  if (std::count(declared.begin(), declared.end(), "number")) declared.push_back("integer");
  if (values) {
    for (const Json& v : *values) {
      for (const std::string& t : declared) {
        if (value_has_type(v, t))
          types.insert(t == "number" && value_has_type(v, "integer") ? "integer" : t);
      }
    }
    return types;
  }
  return {declared.begin(), declared.end()};
}

bool types_overlap(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const std::string& t : a) {
    if (b.count(t) || (t == "number" && b.count("integer")) ||
        (t == "integer" && b.count("number"))) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> required_names(const Json& schema) {
  std::vector<std::string> names;
  if (schema.contains("required") && schema["required"].is_array()) {
    for (const Json& n : schema["required"]) {
      if (n.is_string()) names.push_back(n.get<std::string>());
    }
  }
  return names;
}

}  // namespace

Result<bool> Converter::disjoint(const Json& a_in, const Json& b_in, const std::string& path,
                                 int depth) {
  if (depth > 6) return false;
  // Each side with its $ref and allOf folded in; a side no value satisfies is disjoint from
  // anything.
  const auto flatten = [&](const Json& in) -> Result<std::optional<Json>> {
    auto out = inline_ref(in, path);
    if (!out.ok()) {
      if (out.error().code == ErrorCode::kInvalidArgument) return std::optional<Json>();
      return out.error();
    }
    if (!out->is_object() || !out->contains("allOf") || !(*out)["allOf"].is_array()) {
      return std::optional<Json>(std::move(out).value());
    }
    Json merged = *out;
    merged.erase("allOf");
    for (const Json& part : (*out)["allOf"]) {
      auto next = merge(merged, part, path);
      if (!next.ok()) {
        if (next.error().code == ErrorCode::kInvalidArgument) return std::optional<Json>();
        return std::optional<Json>(std::move(out).value());  // unsure: compare unmerged
      }
      merged = std::move(next).value();
    }
    return std::optional<Json>(std::move(merged));
  };
  STRATA_ASSIGN_OR_RETURN(std::optional<Json> a_flat, flatten(a_in));
  STRATA_ASSIGN_OR_RETURN(std::optional<Json> b_flat, flatten(b_in));
  if (!a_flat || !b_flat) return true;
  const Json& a = *a_flat;
  const Json& b = *b_flat;
  if (!a.is_object() || !b.is_object()) return false;
  const std::set<std::string> types_a = possible_types(a), types_b = possible_types(b);
  if (!types_overlap(types_a, types_b)) return true;
  const auto values = [](const Json& s) -> std::optional<Json> {
    if (s.contains("const")) return Json::array({s["const"]});
    if (s.contains("enum") && s["enum"].is_array()) return s["enum"];
    return std::nullopt;
  };
  const auto values_a = values(a), values_b = values(b);
  if (values_a && values_b) {
    for (const Json& x : *values_a) {
      if (std::find(values_b->begin(), values_b->end(), x) != values_b->end()) return false;
    }
    return true;
  }
  // Objects only: a property one side requires and the other cannot hold.
  for (const std::string& t : types_a) {
    if (t != "object" && types_b.count(t)) return false;
  }
  for (int side = 0; side < 2; ++side) {
    const Json& x = side == 0 ? a : b;
    const Json& y = side == 0 ? b : a;
    for (const std::string& name : required_names(x)) {
      const bool y_declares =
          y.contains("properties") && y["properties"].is_object() && y["properties"].contains(name);
      if (!y_declares) {
        const bool y_closed = y.contains("additionalProperties") &&
                              y["additionalProperties"] == Json(false) &&
                              !y.contains("patternProperties");
        if (y_closed) return true;
        continue;
      }
      const Json x_value =
          x.contains("properties") && x["properties"].is_object() && x["properties"].contains(name)
              ? x["properties"][name]
              : Json::object();
      STRATA_ASSIGN_OR_RETURN(bool apart,
                              disjoint(x_value, y["properties"][name], path, depth + 1));
      if (apart) return true;
    }
  }
  return false;
}

}  // namespace strata::grammar::json_schema_detail
