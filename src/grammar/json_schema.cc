// JSON Schema to GBNF: schema walking, combinators, references, scalars. See json_schema.h.
#include "grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <utility>

#include "grammar/compile_meter.h"
#include "grammar/grammar.h"
#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_internal.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/regex_to_gbnf_automaton.h"
#include "strata/json_depth.h"

namespace strata::grammar {
namespace json_schema_detail {
namespace {

// Keywords that constrain values; anything else (title, description, default, examples,
// $comment, readOnly, x-..., unknown words) is an annotation and is ignored.
const std::set<std::string> kValidationKeywords = {"type",
                                                   "enum",
                                                   "const",
                                                   "properties",
                                                   "required",
                                                   "additionalProperties",
                                                   "patternProperties",
                                                   "items",
                                                   "prefixItems",
                                                   "additionalItems",
                                                   "minItems",
                                                   "maxItems",
                                                   "uniqueItems",
                                                   "anyOf",
                                                   "oneOf",
                                                   "allOf",
                                                   "$ref",
                                                   "pattern",
                                                   "minLength",
                                                   "maxLength",
                                                   "minimum",
                                                   "maximum",
                                                   "exclusiveMinimum",
                                                   "exclusiveMaximum",
                                                   "format",
                                                   "not",
                                                   "if",
                                                   "dependencies",
                                                   "dependentRequired",
                                                   "dependentSchemas",
                                                   "minProperties",
                                                   "maxProperties",
                                                   "multipleOf",
                                                   "contains",
                                                   "minContains",
                                                   "maxContains",
                                                   "propertyNames",
                                                   "unevaluatedProperties",
                                                   "unevaluatedItems",
                                                   "$dynamicRef",
                                                   "$recursiveRef",
                                                   "$strata:notEnum",
                                                   "$strata:notInteger",
                                                   "$strata:notPattern",
                                                   "$strata:patterns",
                                                   "$strata:someKeyOutside",
                                                   "$strata:oneExtra"};

}  // namespace

const std::vector<std::string> kAllTypes = {"null",  "boolean", "object",
                                            "array", "string",  "number"};

std::vector<std::string> type_list(const Json& schema) {
  if (!schema.contains("type")) return kAllTypes;
  const Json& type = schema["type"];
  std::vector<std::string> types;
  if (type.is_string()) types.push_back(type.get<std::string>());
  if (type.is_array()) {
    for (const Json& t : type) {
      if (t.is_string()) types.push_back(t.get<std::string>());
    }
  }
  // integer is a subset of number.
  if (std::count(types.begin(), types.end(), "number") > 0) {
    types.erase(std::remove(types.begin(), types.end(), "integer"), types.end());
  }
  return types;
}

bool value_has_type(const Json& value, const std::string& type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    return value.is_number_integer() ||
           (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
  }
  return false;
}

bool json_deeper_than(const Json& json, size_t limit) {
  std::vector<std::pair<const Json*, size_t>> pending = {{&json, 0}};
  while (!pending.empty()) {
    const auto [node, depth] = pending.back();
    pending.pop_back();
    if (!node->is_structured()) continue;
    if (depth + 1 > limit) return true;
    for (const Json& child : *node) pending.emplace_back(&child, depth + 1);
  }
  return false;
}

Error too_deep_error(size_t depth) {
  return make_error(ErrorCode::kInvalidArgument,
                    "the JSON Schema nests arrays and objects " +
                        (depth > 0 ? std::to_string(depth)
                                   : std::string("more than ") + std::to_string(kMaxJsonDepth)) +
                        " levels deep; at most " + std::to_string(kMaxJsonDepth) +
                        " are accepted: flatten it (use $defs and $ref for shared parts)");
}

namespace {

// The rule names a GBNF rule body mentions (words outside literals and classes).
std::vector<std::string> rule_references(const std::string& body) {
  std::vector<std::string> words;
  for (size_t i = 0; i < body.size();) {
    const char c = body[i];
    if (c == '"' || c == '[') {
      const char close = c == '"' ? '"' : ']';
      for (++i; i < body.size() && body[i] != close; ++i) {
        if (body[i] == '\\') ++i;
      }
      ++i;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') {
      const size_t start = i;
      while (i < body.size() &&
             (std::isalnum(static_cast<unsigned char>(body[i])) || body[i] == '-')) {
        ++i;
      }
      words.push_back(body.substr(start, i - start));
    } else if (c == '{') {
      while (i < body.size() && body[i] != '}') ++i;  // a repetition count, not a name
    } else {
      ++i;
    }
  }
  return words;
}

}  // namespace

Converter::Converter(Json root, const JsonSchemaOptions& options, CompileMeter* meter)
    : root_(std::move(root)), options_(options), meter_(meter ? meter : &own_meter_) {
  if (root_.is_object() && root_.contains("$schema") && root_["$schema"].is_string()) {
    const std::string uri = root_["$schema"].get<std::string>();
    if (uri.find("draft-04") != std::string::npos || uri.find("draft-03") != std::string::npos) {
      draft_ = Draft::k4;
    } else if (uri.find("draft-06") != std::string::npos) {
      draft_ = Draft::k6;
    } else if (uri.find("draft-07") != std::string::npos) {
      draft_ = Draft::k7;
    } else if (uri.find("2019-09") != std::string::npos) {
      draft_ = Draft::k2019;
    }
  }
  index_ids(root_);
}

// Depth-first with an explicit stack: the document may nest arbitrarily deep (run() refuses
// that, but the constructor indexes first).
void Converter::index_ids(const Json& root) {
  std::vector<const Json*> pending = {&root};
  while (!pending.empty()) {
    const Json& schema = *pending.back();
    pending.pop_back();
    if (schema.is_object()) {
      for (const char* key : {"$id", "id", "$anchor"}) {
        auto it = schema.find(key);
        if (it != schema.end() && it->is_string()) {
          const std::string id = it->get<std::string>();
          ids_.emplace(std::string(key) == "$anchor" ? "#" + id : id, &schema);
        }
      }
      // Children pushed last to first, so they are indexed in document order (the first of two
      // equal ids wins, as it did when this walk recursed).
      for (auto it = schema.rbegin(); it != schema.rend(); ++it) {
        const std::string& key = it.key();
        if (key != "enum" && key != "const" && key != "default" && key != "examples") {
          pending.push_back(&*it);
        }
      }
    } else if (schema.is_array()) {
      for (auto it = schema.rbegin(); it != schema.rend(); ++it) pending.push_back(&*it);
    }
  }
}

Status Converter::unenforceable(const std::string& what, const std::string& path) const {
  if (options_.best_effort) return ok_status();
  return make_error(
      ErrorCode::kUnsupported,
      what + " at " + path + " cannot be enforced by a grammar; remove it or ask for best effort");
}

bool is_validation_keyword(const std::string& key) { return kValidationKeywords.count(key) > 0; }

bool Converter::has_validation_keywords(const Json& schema) const {
  if (!schema.is_object()) return false;
  for (const auto& [key, value] : schema.items()) {
    if (kValidationKeywords.count(key)) return true;
  }
  return false;
}

std::string Converter::new_rule(const std::string& hint) {
  std::string name;
  for (char c : hint) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  if (name.size() > 40) name = name.substr(name.size() - 40);
  name = "s-" + name;
  std::string unique = name;
  // A stem's suffixes are handed out in order; probing stays for names that another stem's
  // suffix already took ("s-a-2" from "a" followed by the hint "a-2").
  int& next = next_suffix_[name];
  if (next == 0) next = 2;
  while (rule_index_.count(unique)) unique = name + "-" + std::to_string(next++);
  rule_index_[unique] = rules_.size();
  rules_.emplace_back(unique, "");
  return unique;
}

std::string Converter::new_unique_array_rule() {
  std::string name;
  do {
    name = std::string(kUniqueArrayRulePrefix) + "-" + std::to_string(next_suffix_[""]++);
  } while (rule_index_.count(name));
  rule_index_[name] = rules_.size();
  rules_.emplace_back(name, "");
  return name;
}

void Converter::set_rule(const std::string& name, std::string body) {
  grammar_bytes_ += body.size();
  // Sticky on failure: run() returns the meter's error however the caller treats this one.
  (void)meter_->charge(1 + body.size() / 64);
  rules_[rule_index_.at(name)].second = std::move(body);
}

std::string Converter::base(const std::string& name) {
  if (base_written_.count(name)) return name;
  base_written_.insert(name);
  const auto add = [&](std::string body) {
    rule_index_[name] = rules_.size();
    rules_.emplace_back(name, std::move(body));
  };
  if (name == "ws") {
    // Up to max_whitespace spaces, or a newline and up to max_indent spaces of indentation
    // (spaces only; pretty-printers indent with spaces). The indentation is a chain of rules,
    // one space each, ending in tail position: the parse stays one flat stack, and the chain
    // has one position per space where 41 flat literals had 860 (each position costs a walk
    // over the vocabulary when the grammar is compiled).
    std::string body = "(";
    for (int i = 1; i <= options_.max_whitespace; ++i)
      body += gbnf_literal(std::string(i, ' ')) + " | ";
    add(body + "\"\\n\" ws-indent-0)?");
    for (int i = 0; i <= options_.max_indent; ++i) {
      const std::string rule = "ws-indent-" + std::to_string(i);
      rule_index_[rule] = rules_.size();
      rules_.emplace_back(rule, i < options_.max_indent
                                    ? "(\" \" ws-indent-" + std::to_string(i + 1) + ")?"
                                    : std::string("\"\""));
    }
  } else if (name == "value") {
    add(base("object") + " | " + base("array") + " | " + base("string") + " | " + base("number") +
        " | " + base("boolean") + " | " + base("null"));
  } else if (name == "object") {
    add("\"{\" " + base("ws") +
        " (string ws \":\" ws value ws (\",\" ws string ws \":\" ws value " + "ws)*)? \"}\"");
    base("string");
    base("value");
  } else if (name == "array") {
    add("\"[\" " + base("ws") + " (value ws (\",\" ws value ws)*)? \"]\"");
    base("value");
  } else if (name == "string") {
    add("\"\\\"\" " + base("char") + "* \"\\\"\"");
  } else if (name == "char") {
    add(json_char_gbnf());
  } else if (name == "number") {
    add("\"-\"? (\"0\" | [1-9] [0-9]{0,19}) (\".\" [0-9]{1,24})? ([eE] [-+]? [0-9]{1,3})?");
  } else if (name == "integer") {
    add("\"-\"? (\"0\" | [1-9] [0-9]{0,19})");
  } else if (name == "boolean") {
    add("\"true\" | \"false\"");
  } else if (name == "null") {
    add("\"null\"");
  }
  return name;
}

Result<std::string> Converter::run() {
  if (json_deeper_than(root_, kMaxJsonDepth)) return too_deep_error(0);
  if (!root_.is_object() && !root_.is_boolean()) {
    return make_error(ErrorCode::kInvalidArgument, "a JSON Schema is an object or a boolean");
  }
  STRATA_RETURN_IF_ERROR(meter_->charge());
  auto visited = visit(root_, "#");
  // A spent budget wins over whatever error (or success) the walk made of it.
  STRATA_RETURN_IF_ERROR(meter_->status());
  STRATA_ASSIGN_OR_RETURN(std::string root, std::move(visited));
  // Only the rules root reaches: a branch that failed (and was left out) may have written
  // rules that refer to its unwritten one.
  std::vector<bool> reached(rules_.size(), false);
  std::vector<size_t> pending;
  const auto reach = [&](const std::string& body) {
    for (const std::string& word : rule_references(body)) {
      auto it = rule_index_.find(word);
      if (it != rule_index_.end() && !reached[it->second]) {
        reached[it->second] = true;
        pending.push_back(it->second);
      }
    }
  };
  reach(root);
  while (!pending.empty()) {
    const size_t i = pending.back();
    pending.pop_back();
    reach(rules_[i].second);
  }
  std::string out = "root ::= " + root + "\n";
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (!reached[i]) continue;
    if (rules_[i].second.empty()) {
      return make_error(ErrorCode::kInternal,
                        "JSON Schema converter left rule " + rules_[i].first + " unwritten");
    }
    out += rules_[i].first + " ::= " + rules_[i].second + "\n";
  }
  return out;
}

Result<std::string> Converter::visit(const Json& schema, const std::string& path) {
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return base("value");
    return make_error(ErrorCode::kInvalidArgument, "the schema at " + path +
                                                       " is false: no value "
                                                       "is valid there");
  }
  if (!schema.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, "the schema at " + path + " is not an object");
  }
  if (!has_validation_keywords(schema)) return base("value");
  std::string key = schema.dump();
  STRATA_RETURN_IF_ERROR(meter_->charge(1 + key.size() / 256));
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  if (depth_ > 200) {
    return make_error(ErrorCode::kUnsupported,
                      "the schema nests or recurses too deeply at " + path);
  }
  if (grammar_bytes_ > (size_t{16} << 20)) {
    return make_error(ErrorCode::kUnsupported, "the schema's grammar exceeds 16 MiB at " + path);
  }
  const size_t slash = path.rfind('/');
  const std::string name = new_rule(path == "#" ? "root" : path.substr(slash + 1));
  memo_.emplace(key, name);
  ++depth_;
  auto body = visit_body(schema, path);
  --depth_;
  if (!body.ok()) {
    // The rule stays unwritten; run() leaves out rules that root cannot reach.
    memo_.erase(key);
    return body.error();
  }
  set_rule(name, std::move(body).value());
  return name;
}

Result<std::string> Converter::visit_body(const Json& schema, const std::string& path) {
  for (const char* keyword : {"$dynamicRef", "$recursiveRef"}) {
    if (schema.contains(keyword)) {
      STRATA_RETURN_IF_ERROR(unenforceable("'" + std::string(keyword) + "'", path));
    }
  }
  if (schema.contains("$ref")) {
    // Keywords next to $ref apply in every draft. Drafts 4 to 7 say to ignore them, but
    // validators (ajv) apply them and schemas are written for that: the grammar keeps the
    // values valid under both readings.
    Json rest = schema;
    rest.erase("$ref");
    if (!has_validation_keywords(rest)) {
      if (!schema["$ref"].is_string()) {
        return make_error(ErrorCode::kInvalidArgument, "$ref at " + path + " is not a string");
      }
      const std::string ref = schema["$ref"].get<std::string>();
      STRATA_ASSIGN_OR_RETURN(const Json* target, resolve_ref(ref, path));
      return visit(*target, ref);
    }
    STRATA_ASSIGN_OR_RETURN(Json merged, inline_ref(schema, path));
    return visit(merged, path);
  }
  for (const char* keyword :
       {"not", "if", "dependencies", "dependentRequired", "dependentSchemas"}) {
    if (schema.contains(keyword)) {
      STRATA_ASSIGN_OR_RETURN(Json rewritten, rewrite_conditionals(schema, path));
      return visit(rewritten, path);
    }
  }
  if (schema.contains("allOf") && schema["allOf"].is_array()) {
    Json merged = schema;
    merged.erase("allOf");
    for (size_t i = 0; i < schema["allOf"].size(); ++i) {
      STRATA_ASSIGN_OR_RETURN(
          merged, merge(merged, schema["allOf"][i], path + "/allOf/" + std::to_string(i)));
    }
    return visit(merged, path);
  }
  for (const char* combinator : {"anyOf", "oneOf"}) {
    if (!schema.contains(combinator) || !schema[combinator].is_array()) continue;
    Json rest = schema;
    rest.erase(combinator);
    const bool distribute = has_validation_keywords(rest);
    const Json& branches = schema[combinator];
    std::vector<Json> effective, raw;
    std::vector<std::string> alternatives;
    std::optional<Error> first_error;
    for (size_t i = 0; i < branches.size(); ++i) {
      const std::string branch_path = path + "/" + combinator + "/" + std::to_string(i);
      if (branches[i].is_boolean() && !branches[i].get<bool>()) continue;
      auto branch =
          distribute ? merge(rest, branches[i], branch_path) : inline_ref(branches[i], branch_path);
      auto alt = branch.ok() ? visit(*branch, branch_path) : Result<std::string>(branch.error());
      if (!alt.ok()) {
        // A contradictory branch (kInvalidArgument) admits no value: leave it out.
        if (alt.error().code != ErrorCode::kInvalidArgument) return alt.error();
        if (!first_error) first_error = alt.error();
        continue;
      }
      effective.push_back(std::move(branch).value());
      raw.push_back(branches[i]);
      alternatives.push_back(std::move(alt).value());
    }
    if (alternatives.empty()) {
      if (first_error) return *first_error;
      return make_error(ErrorCode::kInvalidArgument,
                        combinator + std::string(" at ") + path + " has no satisfiable branch");
    }
    if (std::string(combinator) == "oneOf") {
      // The grammar accepts a value matching any branch; oneOf rejects one matching two, so a
      // branch that may share values with others is narrowed to exclude them.
      for (size_t i = 0; i < effective.size(); ++i) {
        std::vector<size_t> overlapping;
        for (size_t j = 0; j < effective.size(); ++j) {
          if (j == i) continue;
          STRATA_ASSIGN_OR_RETURN(bool apart, disjoint(effective[i], effective[j], path, 0));
          if (!apart) overlapping.push_back(j);
        }
        if (overlapping.empty()) continue;
        auto narrowed = exclusive_branch(effective[i], raw, i, overlapping, path);
        if (narrowed.ok()) {
          alternatives[i] = std::move(narrowed).value();
        } else if (narrowed.error().code == ErrorCode::kInvalidArgument) {
          alternatives[i].clear();  // every value of branch i matches another branch too
        } else {
          if (!options_.best_effort) return narrowed.error();
        }
      }
      alternatives.erase(std::remove(alternatives.begin(), alternatives.end(), std::string()),
                         alternatives.end());
      if (alternatives.empty()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "oneOf at " + path + ": every value matches several branches");
      }
    }
    return join_alternatives(alternatives);
  }
  const std::vector<std::string> types = type_list(schema);
  if (schema.contains("enum") || schema.contains("const")) {
    Json values = Json::array();
    if (schema.contains("const")) {
      values.push_back(schema["const"]);
    } else if (schema["enum"].is_array()) {
      values = schema["enum"];
    }
    // JSON values compare without regard to key order.
    const auto listed = [&](const char* key, const Json& value) {
      if (!schema.contains(key) || !schema[key].is_array()) return false;
      const nlohmann::json unordered = nlohmann::json::parse(value.dump());
      return std::any_of(schema[key].begin(), schema[key].end(), [&](const Json& member) {
        return nlohmann::json::parse(member.dump()) == unordered;
      });
    };
    std::vector<std::string> alternatives;
    for (const Json& value : values) {
      if (schema.contains("const") && schema.contains("enum") && !listed("enum", value)) continue;
      if (listed("$strata:notEnum", value)) continue;
      STRATA_ASSIGN_OR_RETURN(bool fits, scalar_keywords_allow(schema, value, path));
      if (!fits) continue;
      const bool typed = std::any_of(types.begin(), types.end(), [&](const std::string& t) {
        return value_has_type(value, t) || (t == "number" && value.is_number());
      });
      if (!typed) continue;
      STRATA_ASSIGN_OR_RETURN(std::string alt, literal(value));
      alternatives.push_back(alt);
    }
    if (alternatives.empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "enum/const at " + path + " has no value of the allowed types");
    }
    return join_alternatives(alternatives);
  }
  std::vector<std::string> alternatives;
  std::optional<Error> first_error;
  for (const std::string& type : types) {
    auto alt = excluded_values(schema, type, path);
    if (alt.ok() && alt->empty()) alt = visit_type(schema, type, path);
    if (!alt.ok()) {
      // A type whose keywords contradict each other admits no value: leave it out.
      if (alt.error().code != ErrorCode::kInvalidArgument) return alt.error();
      if (!first_error) first_error = alt.error();
      continue;
    }
    alternatives.push_back(std::move(alt).value());
  }
  if (alternatives.empty()) {
    if (first_error) return *first_error;
    return make_error(ErrorCode::kInvalidArgument, "'type' at " + path + " names no type");
  }
  return join_alternatives(alternatives);
}

}  // namespace json_schema_detail

Result<std::string> json_schema_to_gbnf(std::string_view schema_json,
                                        const JsonSchemaOptions& options, CompileMeter* meter) {
  if (const size_t depth = json_nesting_depth(schema_json); depth > kMaxJsonDepth) {
    return json_schema_detail::too_deep_error(depth);
  }
  if (meter) {
    meter->set_subject("the JSON schema");
    STRATA_RETURN_IF_ERROR(meter->charge(1 + schema_json.size() / 256));
  }
  auto schema = parse_ordered_json(schema_json, meter);
  if (!schema.ok()) {
    if (schema.error().code != ErrorCode::kInvalidArgument) return schema.error();
    return make_error(ErrorCode::kInvalidArgument, "the JSON Schema is not valid JSON");
  }
  if (!options.assert_formats) json_schema_detail::drop_formats(*schema);
  return json_schema_detail::Converter(std::move(schema).value(), options, meter).run();
}

Result<std::string> parsed_json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                               const JsonSchemaOptions& options,
                                               CompileMeter* meter) {
  // Before the copy into the converter, which recurses once per level.
  if (json_schema_detail::json_deeper_than(schema, kMaxJsonDepth)) {
    return json_schema_detail::too_deep_error(0);
  }
  if (meter) meter->set_subject("the JSON schema");
  if (!options.assert_formats) {
    nlohmann::ordered_json annotated = schema;
    json_schema_detail::drop_formats(annotated);
    return json_schema_detail::Converter(annotated, options, meter).run();
  }
  return json_schema_detail::Converter(schema, options, meter).run();
}

std::string json_object_gbnf(const JsonSchemaOptions& options) {
  json_schema_detail::Converter converter(json_schema_detail::Json::object(), options);
  auto grammar = converter.run();  // an empty schema: any value; root is replaced below
  std::string text = "root ::= " + converter.base("object") + "\n";
  // run() wrote `root ::= value` and the value rules; keep those rules, not its root.
  const std::string& all = grammar.value();
  return text + all.substr(all.find('\n') + 1);
}

}  // namespace strata::grammar
