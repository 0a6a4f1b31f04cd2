// Reorders a JSON instance's keys into the order json_schema_to_gbnf's grammar writes them.
// Every subschema that may apply to a value (through $ref, allOf, anyOf, oneOf) contributes its
// `properties` order, in the order the converter merges them: a $ref target before its
// siblings, a schema's own keywords before its allOf/anyOf/oneOf branches.
#include <algorithm>
#include <deque>

#include "grammar/json_schema.h"
#include "grammar/json_schema_converter.h"
#include "strata/json_depth.h"

namespace strata::grammar {
namespace {

using json_schema_detail::Json;

class InstanceOrderer {
 public:
  explicit InstanceOrderer(const Json& root) : root_(root) {}

  Json order(const Json& instance, const std::vector<const Json*>& schemas, int depth) {
    if (depth > 64) return instance;
    std::vector<const Json*> flat;
    for (const Json* s : schemas) flatten(s, instance, &flat, 0);
    if (instance.is_object()) return order_object(instance, flat, depth);
    if (instance.is_array()) {
      Json out = Json::array();
      for (size_t i = 0; i < instance.size(); ++i) {
        std::vector<const Json*> item_schemas;
        for (const Json* s : flat) {
          const Json* item = item_schema(*s, i);
          if (item) item_schemas.push_back(item);
        }
        out.push_back(order(instance[i], item_schemas, depth + 1));
      }
      return out;
    }
    return instance;
  }

 private:
  const Json* resolve(const std::string& ref) const {
    if (ref.empty() || ref[0] != '#') return nullptr;
    const std::string pointer = ref.substr(1);
    if (pointer.empty()) return &root_;
    try {
      std::string decoded;
      for (size_t i = 0; i < pointer.size(); ++i) {
        if (pointer[i] == '%' && i + 2 < pointer.size()) {
          decoded += static_cast<char>(std::stoi(pointer.substr(i + 1, 2), nullptr, 16));
          i += 2;
        } else {
          decoded += pointer[i];
        }
      }
      const Json& target = root_.at(Json::json_pointer(decoded));
      return &target;
    } catch (const std::exception&) {
      return nullptr;
    }
  }

  // The subschemas that apply to `instance` in the converter's merge order: a schema's own
  // keywords and those of its allOf members (and $ref targets) first, then the anyOf/oneOf
  // branches of all of them. For an object, of an anyOf/oneOf only the branch that fits it best
  // counts (branches may order keys differently); for other values all branches do.
  void flatten(const Json* schema, const Json& instance, std::vector<const Json*>* out,
               int depth) const {
    const size_t first = out->size();
    flatten_own(schema, instance, out, depth);
    const size_t last = out->size();
    for (size_t i = first; i < last; ++i) add_branches((*out)[i], instance, out, depth);
  }

  // A subschema still to flatten, or subschemas already flattened (a conditional's rewrite).
  struct Pending {
    const Json* schema = nullptr;
    std::vector<const Json*> flat;
  };

  // `schema` and its allOf members in the order the converter merges them, level by level:
  // Converter::merge appends each member's own allOf list to the merged schema's, which is
  // visited only after every member of this level. So: the schema's own keywords (a $ref
  // target's first), then each allOf member's own, then the allOf lists those held, and so on.
  void flatten_own(const Json* schema, const Json& instance, std::vector<const Json*>* out,
                   int depth) const {
    std::vector<Pending> level = {{schema, {}}};
    for (int d = depth; !level.empty() && d <= 32; ++d) {
      std::vector<Pending> next;
      for (const Pending& p : level) {
        if (p.schema != nullptr) {
          add_own(p.schema, instance, out, &next, d);
          continue;
        }
        for (const Json* s : p.flat) {
          if (std::find(out->begin(), out->end(), s) == out->end()) out->push_back(s);
        }
      }
      level = std::move(next);
    }
  }

  // Adds a schema (after its $ref target) to `out`, and what merges after this level to `next`:
  // its allOf members, then the allOf pieces the converter rewrites if/then/else and the
  // dependency keywords into (json_schema_negate.cc), in this order.
  void add_own(const Json* schema, const Json& instance, std::vector<const Json*>* out,
               std::vector<Pending>* next, int depth) const {
    if (depth > 32 || !schema->is_object()) return;
    if (std::find(out->begin(), out->end(), schema) != out->end()) return;
    if (schema->contains("$ref") && (*schema)["$ref"].is_string()) {
      if (const Json* target = resolve((*schema)["$ref"].get<std::string>())) {
        add_own(target, instance, out, next, depth + 1);
      }
    }
    out->push_back(schema);
    if (schema->contains("allOf") && (*schema)["allOf"].is_array()) {
      for (const Json& branch : (*schema)["allOf"]) next->push_back({&branch, {}});
    }
    if (schema->contains("if") && instance.is_object()) {
      std::vector<const Json*> with_then, with_else;
      flatten(&(*schema)["if"], instance, &with_then, depth + 1);
      if (schema->contains("then")) flatten(&(*schema)["then"], instance, &with_then, depth + 1);
      if (schema->contains("else")) flatten(&(*schema)["else"], instance, &with_else, depth + 1);
      next->push_back(
          {nullptr, fit(with_else, instance) > fit(with_then, instance) ? with_else : with_then});
    }
    for (const char* key : {"dependencies", "dependentRequired", "dependentSchemas"}) {
      if (!instance.is_object() || !schema->contains(key) || !(*schema)[key].is_object()) {
        continue;
      }
      for (const auto& [name, dependency] : (*schema)[key].items()) {
        if (!instance.contains(name)) continue;
        Pending piece;
        synthesized_.push_back(Json{{"required", Json::array({name})}});
        piece.flat.push_back(&synthesized_.back());
        if (dependency.is_array()) {
          synthesized_.push_back(Json{{"required", dependency}});
          piece.flat.push_back(&synthesized_.back());
        } else {
          flatten(&dependency, instance, &piece.flat, depth + 1);
        }
        next->push_back(std::move(piece));
      }
    }
  }

  void add_branches(const Json* schema, const Json& instance, std::vector<const Json*>* out,
                    int depth) const {
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!schema->contains(key) || !(*schema)[key].is_array()) continue;
      const Json& branches = (*schema)[key];
      if (!instance.is_object()) {
        for (const Json& branch : branches) flatten(&branch, instance, out, depth + 1);
        continue;
      }
      const Json* best = nullptr;
      long best_score = 0;
      for (const Json& branch : branches) {
        std::vector<const Json*> flat;
        flatten(&branch, instance, &flat, depth + 1);
        const long score = fit(flat, instance);
        if (!best || score > best_score) {
          best = &branch;
          best_score = score;
        }
      }
      if (best) flatten(best, instance, out, depth + 1);
    }
  }

  // How well an object fits a set of subschemas: keys they declare, minus mismatched
  // const/enum values, missing required keys and keys a closed schema forbids.
  static long fit(const std::vector<const Json*>& flat, const Json& instance) {
    long score = 0;
    for (const Json* s : flat) {
      const bool has_properties = s->contains("properties") && (*s)["properties"].is_object();
      if (has_properties) {
        for (const auto& [key, sub] : (*s)["properties"].items()) {
          if (!instance.contains(key)) continue;
          score += 1;
          if (!sub.is_object()) continue;
          if (sub.contains("const") && sub["const"] != instance[key]) score -= 100;
          if (sub.contains("enum") && sub["enum"].is_array() &&
              std::find(sub["enum"].begin(), sub["enum"].end(), instance[key]) ==
                  sub["enum"].end()) {
            score -= 100;
          }
        }
      }
      if (s->contains("required") && (*s)["required"].is_array()) {
        for (const Json& key : (*s)["required"]) {
          if (key.is_string() && !instance.contains(key.get<std::string>())) score -= 50;
        }
      }
      if (s->contains("additionalProperties") && (*s)["additionalProperties"] == Json(false) &&
          !s->contains("patternProperties")) {
        for (const auto& [key, value] : instance.items()) {
          if (!has_properties || !(*s)["properties"].contains(key)) score -= 10;
        }
      }
    }
    return score;
  }

  static const Json* item_schema(const Json& schema, size_t index) {
    const char* tuple = schema.contains("prefixItems") ? "prefixItems" : "items";
    const char* rest = schema.contains("prefixItems") ? "items" : "additionalItems";
    if (schema.contains(tuple) && schema[tuple].is_array()) {
      if (index < schema[tuple].size()) return &schema[tuple][index];
      return schema.contains(rest) ? &schema[rest] : nullptr;
    }
    return schema.contains("items") ? &schema["items"] : nullptr;
  }

  Json order_object(const Json& instance, const std::vector<const Json*>& flat, int depth) {
    std::vector<std::string> keys;
    const auto add_key = [&](const std::string& key) {
      if (instance.contains(key) && std::find(keys.begin(), keys.end(), key) == keys.end()) {
        keys.push_back(key);
      }
    };
    for (const Json* s : flat) {
      if (s->contains("properties") && (*s)["properties"].is_object()) {
        for (const auto& [key, sub] : (*s)["properties"].items()) add_key(key);
      }
    }
    for (const Json* s : flat) {
      if (s->contains("required") && (*s)["required"].is_array()) {
        for (const Json& key : (*s)["required"]) {
          if (key.is_string()) add_key(key.get<std::string>());
        }
      }
    }
    for (const auto& [key, value] : instance.items()) add_key(key);
    Json out = Json::object();
    for (const std::string& key : keys) {
      std::vector<const Json*> value_schemas;
      for (const Json* s : flat) member_schemas(*s, key, &value_schemas);
      out[key] = order(instance[key], value_schemas, depth + 1);
    }
    return out;
  }

  static void member_schemas(const Json& schema, const std::string& key,
                             std::vector<const Json*>* out) {
    bool declared = false;
    if (schema.contains("properties") && schema["properties"].is_object() &&
        schema["properties"].contains(key)) {
      out->push_back(&schema["properties"][key]);
      declared = true;
    }
    if (schema.contains("patternProperties") && schema["patternProperties"].is_object()) {
      for (const auto& [pattern, sub] : schema["patternProperties"].items()) {
        if (json_schema_detail::regex_search(pattern, key).value_or(false)) {
          out->push_back(&sub);
          declared = true;
        }
      }
    }
    if (!declared && schema.contains("additionalProperties")) {
      out->push_back(&schema["additionalProperties"]);
    }
  }

  const Json& root_;
  // Schemas the rewrites imply (stable addresses: a deque never moves its elements).
  mutable std::deque<Json> synthesized_;
};

}  // namespace

Result<std::string> order_instance_like_schema(std::string_view schema_json,
                                               std::string_view instance_json, int indent) {
  // Both are copied and dumped recursively below.
  if (const size_t depth = json_nesting_depth(schema_json); depth > kMaxJsonDepth) {
    return json_schema_detail::too_deep_error(depth);
  }
  if (const size_t depth = json_nesting_depth(instance_json); depth > kMaxJsonDepth) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the instance nests arrays and objects " + std::to_string(depth) +
                          " levels deep; at most " + std::to_string(kMaxJsonDepth) +
                          " are accepted");
  }
  auto parsed_schema = parse_ordered_json(schema_json);
  auto parsed_instance = parse_ordered_json(instance_json);
  if (!parsed_schema.ok() || !parsed_instance.ok()) {
    return make_error(ErrorCode::kInvalidArgument, "the schema or the instance is not valid JSON");
  }
  const Json& schema = *parsed_schema;
  const Json& instance = *parsed_instance;
  InstanceOrderer orderer(schema);
  const Json ordered = orderer.order(instance, {&schema}, 0);
  return ordered.dump(indent, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

}  // namespace strata::grammar
