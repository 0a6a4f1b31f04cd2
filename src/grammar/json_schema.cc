// JSON Schema to GBNF: schema walking, combinators, references, scalars. See json_schema.h.
#include "grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_internal.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/regex_to_gbnf_automaton.h"

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
                                                   "$strata:notPattern"};

const std::vector<std::string> kAllTypes = {"null",  "boolean", "object",
                                            "array", "string",  "number"};

std::string join_alternatives(const std::vector<std::string>& alternatives) {
  if (alternatives.size() == 1) return alternatives[0];
  std::string out = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
  return out + ")";
}

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

}  // namespace

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

Converter::Converter(Json root, const JsonSchemaOptions& options)
    : root_(std::move(root)), options_(options) {
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

void Converter::index_ids(const Json& schema) {
  if (schema.is_object()) {
    for (const char* key : {"$id", "id", "$anchor"}) {
      if (schema.contains(key) && schema[key].is_string()) {
        const std::string id = schema[key].get<std::string>();
        ids_.emplace(std::string(key) == "$anchor" ? "#" + id : id, &schema);
      }
    }
    for (const auto& [key, value] : schema.items()) {
      if (key != "enum" && key != "const" && key != "default" && key != "examples") {
        index_ids(value);
      }
    }
  } else if (schema.is_array()) {
    for (const Json& item : schema) index_ids(item);
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
  for (int i = 2; rule_index_.count(unique); ++i) unique = name + "-" + std::to_string(i);
  rule_index_[unique] = rules_.size();
  rules_.emplace_back(unique, "");
  return unique;
}

void Converter::set_rule(const std::string& name, std::string body) {
  grammar_bytes_ += body.size();
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
    // Written as flat literals: nested optional repetitions ([ ]{0,n}) cost the matcher far
    // more stacks on every token boundary. Spaces only; pretty-printers indent with spaces.
    std::string body = "(";
    for (int i = 1; i <= options_.max_whitespace; ++i)
      body += gbnf_literal(std::string(i, ' ')) + " | ";
    for (int i = 0; i <= options_.max_indent; ++i) {
      body += gbnf_literal("\n" + std::string(i, ' ')) + (i < options_.max_indent ? " | " : "");
    }
    add(body + ")?");
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
  if (!root_.is_object() && !root_.is_boolean()) {
    return make_error(ErrorCode::kInvalidArgument, "a JSON Schema is an object or a boolean");
  }
  STRATA_ASSIGN_OR_RETURN(std::string root, visit(root_, "#"));
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
    Json rest = schema;
    rest.erase("$ref");
    if (draft_ < Draft::k2019 || !has_validation_keywords(rest)) {
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
    const auto listed = [&](const char* key, const Json& value) {
      return schema.contains(key) && schema[key].is_array() &&
             std::find(schema[key].begin(), schema[key].end(), value) != schema[key].end();
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

Result<bool> Converter::scalar_keywords_allow(const Json& schema, const Json& value,
                                              const std::string& path) {
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    std::vector<std::string> patterns, not_patterns;
    if (schema.contains("pattern") && schema["pattern"].is_string()) {
      patterns.push_back(schema["pattern"].get<std::string>());
    }
    if (schema.contains("$strata:notPattern") && schema["$strata:notPattern"].is_array()) {
      for (const Json& p : schema["$strata:notPattern"]) {
        if (p.is_string()) not_patterns.push_back(p.get<std::string>());
      }
    }
    if (schema.contains("format") && schema["format"].is_string()) {
      bool unsupported = false;
      std::optional<std::string> regex =
          format_regex(schema["format"].get<std::string>(), &unsupported);
      if (regex) patterns.push_back(*regex);
    }
    long min_length = 0, max_length = -1;
    if (schema.contains("minLength") && schema["minLength"].is_number()) {
      min_length = static_cast<long>(std::ceil(schema["minLength"].get<double>()));
    }
    if (schema.contains("maxLength") && schema["maxLength"].is_number()) {
      max_length = static_cast<long>(std::floor(schema["maxLength"].get<double>()));
    }
    if (patterns.empty() && not_patterns.empty() && min_length == 0 && max_length < 0) return true;
    auto dfa = string_automaton(patterns, not_patterns, {}, min_length, max_length);
    if (!dfa.ok()) return make_error(dfa.error().code, dfa.error().message + " (at " + path + ")");
    return dfa->accepts(text);
  }
  if (value.is_number()) {
    const double v = value.get<double>();
    if (schema.contains("$strata:notInteger") && std::floor(v) == v) return false;
    const auto bound = [&](const char* key) -> std::optional<double> {
      if (schema.contains(key) && schema[key].is_number()) return schema[key].get<double>();
      return std::nullopt;
    };
    const auto flag = [&](const char* key) {
      return schema.contains(key) && schema[key].is_boolean() && schema[key].get<bool>();
    };
    if (auto m = bound("minimum"); m && (flag("exclusiveMinimum") ? v <= *m : v < *m)) return false;
    if (auto m = bound("maximum"); m && (flag("exclusiveMaximum") ? v >= *m : v > *m)) return false;
    if (auto m = bound("exclusiveMinimum"); m && v <= *m) return false;
    if (auto m = bound("exclusiveMaximum"); m && v >= *m) return false;
  }
  return true;
}

Result<std::string> Converter::excluded_values(const Json& schema, const std::string& type,
                                               const std::string& path) {
  if (!schema.contains("$strata:notEnum") || !schema["$strata:notEnum"].is_array())
    return std::string();
  std::vector<std::string> strings;
  bool excludes_true = false, excludes_false = false, excludes_null = false, others = false;
  for (const Json& value : schema["$strata:notEnum"]) {
    if (!value_has_type(value, type) && !(type == "number" && value.is_number())) continue;
    if (value.is_string()) {
      strings.push_back(value.get<std::string>());
    } else if (value.is_boolean()) {
      (value.get<bool>() ? excludes_true : excludes_false) = true;
    } else if (value.is_null()) {
      excludes_null = true;
    } else {
      others = true;
    }
  }
  if (others) {
    return make_error(ErrorCode::kUnsupported, "'not' of a " + type + " value at " + path +
                                                   " cannot be enforced by a grammar");
  }
  if (excludes_null) return make_error(ErrorCode::kInvalidArgument, "null excluded at " + path);
  if (excludes_true && excludes_false) {
    return make_error(ErrorCode::kInvalidArgument, "both booleans excluded at " + path);
  }
  if (excludes_true) return std::string("\"false\"");
  if (excludes_false) return std::string("\"true\"");
  if (!strings.empty()) return string_grammar(schema, path, strings);
  return std::string();
}

Result<std::string> Converter::visit_type(const Json& schema, const std::string& type,
                                          const std::string& path) {
  if (type == "null") return base("null");
  if (type == "boolean") return base("boolean");
  if (type == "string") return string_grammar(schema, path, {});
  if (type == "number") return number_grammar(schema, /*integer=*/false, path);
  if (type == "integer") return number_grammar(schema, /*integer=*/true, path);
  if (type == "object") return object_grammar(schema, path);
  if (type == "array") return array_grammar(schema, path);
  return make_error(ErrorCode::kInvalidArgument, "unknown type '" + type + "' at " + path);
}

Result<std::string> Converter::literal(const Json& value) {
  if (value.is_string()) {
    return gbnf_literal("\"" + json_escape(value.get<std::string>()) + "\"");
  }
  if (value.is_number_integer()) {
    // JSON Schema compares numbers by value: 1 and 1.0 are the same enum member.
    return "(" + gbnf_literal(value.dump()) + " (\".0\")?)";
  }
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (std::floor(v) == v && std::fabs(v) < 1e15) {
      const std::string whole = std::to_string(static_cast<int64_t>(v));
      return "(" + gbnf_literal(whole) + " | " + gbnf_literal(whole + ".0") + ")";
    }
  }
  if (value.is_array()) {
    std::string out = "\"[\" " + base("ws");
    for (size_t i = 0; i < value.size(); ++i) {
      STRATA_ASSIGN_OR_RETURN(std::string item, literal(value[i]));
      out += (i ? " \",\" ws " : " ") + item + " ws";
    }
    return out + " \"]\"";
  }
  if (value.is_object()) {
    std::string out = "\"{\" " + base("ws");
    bool first = true;
    for (const auto& [key, item] : value.items()) {
      STRATA_ASSIGN_OR_RETURN(std::string item_gbnf, literal(item));
      out += (first ? " " : " \",\" ws ") + gbnf_literal("\"" + json_escape(key) + "\"") +
             " ws \":\" ws " + item_gbnf + " ws";
      first = false;
    }
    return out + " \"}\"";
  }
  return gbnf_literal(value.dump());
}

Result<std::string> Converter::string_grammar(const Json& schema, const std::string& path,
                                              const std::vector<std::string>& excluded) {
  long min_length = 0, max_length = -1;
  if (schema.contains("minLength") && schema["minLength"].is_number()) {
    min_length = static_cast<long>(std::ceil(schema["minLength"].get<double>()));
  }
  if (schema.contains("maxLength") && schema["maxLength"].is_number()) {
    max_length = static_cast<long>(std::floor(schema["maxLength"].get<double>()));
  }
  if (max_length >= 0 && max_length < min_length) {
    return make_error(ErrorCode::kInvalidArgument,
                      "maxLength < minLength at " + path + ": no string is valid");
  }
  // Patterns the string must match, and patterns it must not.
  std::vector<std::string> patterns, not_patterns;
  if (schema.contains("pattern") && schema["pattern"].is_string()) {
    patterns.push_back(schema["pattern"].get<std::string>());
  }
  if (schema.contains("$strata:notPattern") && schema["$strata:notPattern"].is_array()) {
    for (const Json& p : schema["$strata:notPattern"]) {
      if (p.is_string()) not_patterns.push_back(p.get<std::string>());
    }
  }
  if (schema.contains("format") && schema["format"].is_string()) {
    const std::string format = schema["format"].get<std::string>();
    bool unsupported = false;
    std::optional<std::string> regex = format_regex(format, &unsupported);
    if (unsupported) STRATA_RETURN_IF_ERROR(unenforceable("format '" + format + "'", path));
    if (regex) patterns.push_back(*regex);
  }
  const std::string quote = gbnf_literal("\"");
  if (patterns.size() == 1 && not_patterns.empty() && excluded.empty()) {
    auto body = regex_to_gbnf(patterns[0], min_length, max_length);
    if (body.ok()) return quote + " " + *body + " " + quote;
    if (body.error().code != ErrorCode::kUnsupported) {
      return make_error(body.error().code, body.error().message + " (at " + path + ")");
    }
  }
  if (!patterns.empty() || !not_patterns.empty() || !excluded.empty()) {
    auto automaton = string_automaton(patterns, not_patterns, excluded, min_length, max_length);
    if (automaton.ok()) {
      if (automaton->empty()) {
        return make_error(ErrorCode::kInvalidArgument, "no string at " + path +
                                                           " satisfies its pattern, format, "
                                                           "length and exclusions together");
      }
      const std::string hint = path + "/string";
      const std::string start = automaton->to_gbnf(
          [&] { return new_rule(hint); },
          [&](const std::string& name, std::string body) { set_rule(name, std::move(body)); });
      return quote + " " + start + " " + quote;
    }
    if (automaton.error().code != ErrorCode::kUnsupported || !options_.best_effort) {
      return make_error(automaton.error().code, automaton.error().message + " (at " + path + ")");
    }
  }
  if (min_length == 0 && max_length < 0) return base("string");
  // The GBNF parser repeats at most 10000 times; longer bounds count in blocks of 1000:
  // n = 1000 q + s characters, and "at most r" splits at r's block count.
  constexpr long kMaxRepeat = 10000, kBlock = 1000, kMaxLength = kBlock * kMaxRepeat;
  if (min_length > kMaxLength || max_length > kMaxLength) {
    STRATA_RETURN_IF_ERROR(unenforceable("a string length bound above 10000000", path));
    min_length = std::min(min_length, kMaxLength);
    if (max_length > kMaxLength) max_length = -1;
  }
  const std::string c = base("char");
  const auto times = [&](const std::string& item, long lo, long hi) {
    if (hi == lo) return lo == 0 ? std::string() : item + "{" + std::to_string(lo) + "}";
    if (hi < 0) return item + "{" + std::to_string(lo) + ",}";
    return item + "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
  };
  std::string block;
  const auto get_block = [&] {
    if (block.empty()) {
      block = new_rule(path + "/block");
      set_rule(block, c + "{" + std::to_string(kBlock) + "}");
    }
    return block;
  };
  const auto exactly = [&](long n) {
    if (n <= kMaxRepeat) return times(c, n, n);
    const std::string rest = times(c, n % kBlock, n % kBlock);
    return times(get_block(), n / kBlock, n / kBlock) + (rest.empty() ? "" : " " + rest);
  };
  const auto at_most = [&](long r) {
    if (r <= kMaxRepeat) return times(c, 0, r);
    const long q = r / kBlock, rem = r % kBlock;
    return "(" + times(get_block(), 0, q - 1) + " " + times(c, 0, kBlock - 1) + " | " +
           times(get_block(), q, q) + (rem ? " " + times(c, 0, rem) : "") + ")";
  };
  std::string body = exactly(min_length);
  const std::string more = max_length < 0 ? c + "*" : at_most(max_length - min_length);
  if (max_length != min_length) body += (body.empty() ? "" : " ") + more;
  return quote + " " + body + " " + quote;
}

Result<CharDfa> Converter::string_automaton(const std::vector<std::string>& patterns,
                                            const std::vector<std::string>& not_patterns,
                                            const std::vector<std::string>& excluded,
                                            long min_length, long max_length) {
  CharDfa dfa = CharDfa::any();
  const auto check = [](const CharDfa& d) -> Status {
    if (d.size() > kMaxDfaStates) {
      return make_error(ErrorCode::kUnsupported, "string constraints whose automaton exceeds " +
                                                     std::to_string(kMaxDfaStates) + " states");
    }
    return ok_status();
  };
  for (const std::string& pattern : patterns) {
    STRATA_ASSIGN_OR_RETURN(CharDfa one, CharDfa::from_pattern(pattern));
    dfa = dfa.intersect(one);
    STRATA_RETURN_IF_ERROR(check(dfa));
  }
  for (const std::string& pattern : not_patterns) {
    STRATA_ASSIGN_OR_RETURN(CharDfa one, CharDfa::from_pattern(pattern));
    dfa = dfa.intersect(one.complement());
    STRATA_RETURN_IF_ERROR(check(dfa));
  }
  if (!excluded.empty()) {
    dfa = dfa.intersect(CharDfa::literals(excluded).complement());
    STRATA_RETURN_IF_ERROR(check(dfa));
  }
  if (min_length > 0 || max_length >= 0) {
    dfa = dfa.with_length(min_length, max_length);
    STRATA_RETURN_IF_ERROR(check(dfa));
  }
  return dfa;
}

Result<std::string> Converter::number_grammar(const Json& schema, bool integer,
                                              const std::string& path) {
  if (schema.contains("$strata:notInteger")) {
    if (integer) {
      return make_error(ErrorCode::kInvalidArgument, "an integer that is not one at " + path);
    }
    for (const char* key :
         {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}) {
      if (schema.contains(key)) {
        return make_error(ErrorCode::kUnsupported, "'not' of an integer next to '" +
                                                       std::string(key) + "' at " + path +
                                                       " cannot be enforced by a grammar");
      }
    }
    // Written without an exponent, with a fraction that is not all zeros.
    return std::string("\"-\"? (\"0\" | [1-9] [0-9]{0,19}) \".\" \"0\"{0,23} [1-9] [0-9]{0,23}");
  }
  if (schema.contains("multipleOf") && schema["multipleOf"].is_number()) {
    const double step = schema["multipleOf"].get<double>();
    if (step == 1.0) {
      integer = true;
    } else if (!(integer && step > 0 && std::floor(1.0 / step) == 1.0 / step)) {
      STRATA_RETURN_IF_ERROR(unenforceable("'multipleOf'", path));
    }
  }
  std::optional<Bound> lower, upper;
  const auto read = [&](const char* inclusive_key, const char* exclusive_key,
                        std::optional<Bound>* bound, bool lower_side) {
    const auto tighter = [&](Bound b) {
      if (!*bound) {
        *bound = b;
        return;
      }
      const bool better = lower_side ? (b.value > (*bound)->value) : (b.value < (*bound)->value);
      if (better || (b.value == (*bound)->value && b.exclusive)) *bound = b;
    };
    if (schema.contains(inclusive_key) && schema[inclusive_key].is_number()) {
      const bool draft4_exclusive = schema.contains(exclusive_key) &&
                                    schema[exclusive_key].is_boolean() &&
                                    schema[exclusive_key].get<bool>();
      tighter(Bound{schema[inclusive_key].get<double>(), draft4_exclusive});
    }
    if (schema.contains(exclusive_key) && schema[exclusive_key].is_number()) {
      tighter(Bound{schema[exclusive_key].get<double>(), true});
    }
  };
  read("minimum", "exclusiveMinimum", &lower, true);
  read("maximum", "exclusiveMaximum", &upper, false);
  if (integer) {
    constexpr double kLimit = 9.2e18;
    std::optional<int64_t> lo, hi;
    if (lower && std::fabs(lower->value) < kLimit) {
      lo = static_cast<int64_t>(lower->exclusive ? std::floor(lower->value) + 1
                                                 : std::ceil(lower->value));
    }
    if (upper && std::fabs(upper->value) < kLimit) {
      hi = static_cast<int64_t>(upper->exclusive ? std::ceil(upper->value) - 1
                                                 : std::floor(upper->value));
    }
    if (!lo && !hi) return base("integer");
    if (lo && hi && *lo > *hi) {
      return make_error(ErrorCode::kInvalidArgument, "no integer is within the bounds at " + path);
    }
    return integer_range_gbnf(lo, hi);
  }
  if (!lower && !upper) return base("number");
  auto range = number_range_gbnf(lower, upper);
  if (range.ok()) return range;
  if (range.error().code == ErrorCode::kUnsupported) {
    STRATA_RETURN_IF_ERROR(unenforceable(range.error().message, path));
    return base("number");
  }
  return make_error(range.error().code, range.error().message + " (at " + path + ")");
}

}  // namespace json_schema_detail

Result<std::string> json_schema_to_gbnf(std::string_view schema_json,
                                        const JsonSchemaOptions& options) {
  json_schema_detail::Json schema =
      json_schema_detail::Json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) {
    return make_error(ErrorCode::kInvalidArgument, "the JSON Schema is not valid JSON");
  }
  return json_schema_detail::Converter(std::move(schema), options).run();
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
