// The JSON Schema converter's state: the schema tree, the rules written so far, and $ref
// resolution. json_schema.cc walks schemas (types, combinators, references); the other
// json_schema_*.cc files write scalars, objects and arrays, object keys, counted shapes,
// negations, and hold $ref/allOf merging and disjointness; json_schema_parse.cc reads the
// schema's text.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/compile_meter.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_internal.h"
#include "grammar/regex_to_gbnf_automaton.h"
#include "strata/result.h"

namespace strata::grammar::json_schema_detail {

// Ordered, so that `properties` keep the schema's order.
using Json = nlohmann::ordered_json;

// Removes `format` from every schema object of `schema` (the document and every subschema
// reached through the applicator keywords and definitions), leaving properties named "format"
// alone: the annotation-only format policy (JsonSchemaOptions::assert_formats).
void drop_formats(Json& schema);

// Whether a schema keyword constrains values (as opposed to an annotation).
bool is_validation_keyword(const std::string& key);

// The six JSON types ("integer" lies inside "number").
extern const std::vector<std::string> kAllTypes;
// The types a schema's `type` names (all six when absent; "integer" dropped next to "number").
std::vector<std::string> type_list(const Json& schema);
// Whether a JSON value has a JSON Schema type (1.0 is an integer).
bool value_has_type(const Json& value, const std::string& type);

// Whether `text` matches the ECMA-262 `pattern` anywhere (JSON Schema's pattern semantics);
// nullopt when std::regex cannot compile it, or when the text (over 1000 bytes) or the group
// nesting is past what std::regex's recursive matcher handles safely.
std::optional<bool> regex_search(const std::string& pattern, const std::string& text);

enum class Draft { k4, k6, k7, k2019, k2020 };

// Whether `json` nests arrays and objects more than `limit` deep, measured without recursion:
// copying, comparing and dump() of nlohmann JSON recurse once per level, so a document handed
// over already parsed is measured with this before anything else walks it.
bool json_deeper_than(const Json& json, size_t limit);

// The error for schema JSON nested deeper than kMaxJsonDepth.
Error too_deep_error(size_t depth);

class Converter {
 public:
  // `meter`: charged for the work done (nullptr: a meter of the converter's own, with only the
  // cap). It must outlive the converter.
  Converter(Json root, const JsonSchemaOptions& options, CompileMeter* meter = nullptr);

  // The whole grammar: `root ::= ...` and every rule it uses. A root nested deeper than
  // kMaxJsonDepth is an error (checked first, without recursion).
  Result<std::string> run();

  // Shared rules, written on first use: ws, value, object, array, string, char, number,
  // integer, boolean, null. Returns the rule name.
  std::string base(const std::string& name);

 private:
  // A GBNF expression (usually a rule name) for the values valid under `schema`.
  Result<std::string> visit(const Json& schema, const std::string& path);
  Result<std::string> visit_body(const Json& schema, const std::string& path);
  Result<std::string> visit_type(const Json& schema, const std::string& type,
                                 const std::string& path);
  // `excluded`: strings the value must not be (from `not` of an enum or const).
  Result<std::string> string_grammar(const Json& schema, const std::string& path,
                                     const std::vector<std::string>& excluded);
  // The strings that match every pattern, none of the not_patterns, are not excluded, and
  // have a length in [min_length, max_length] (max_length -1: unbounded).
  Result<CharDfa> string_automaton(const std::vector<std::string>& patterns,
                                   const std::vector<std::string>& not_patterns,
                                   const std::vector<std::string>& excluded, long min_length,
                                   long max_length);
  Result<std::string> number_grammar(const Json& schema, bool integer, const std::string& path);
  Result<std::string> object_grammar(const Json& schema, const std::string& path);
  Result<std::string> array_grammar(const Json& schema, const std::string& path);
  Result<std::string> literal(const Json& value);
  // The members of an object whose keys are not `declared`: one alternative per set of
  // patternProperties a key matches (additionalProperties for none).
  Result<std::vector<std::string>> pattern_members(const Json& patterns, const Json& additional,
                                                   const std::vector<std::string>& declared,
                                                   const std::optional<CharDfa>& key_filter,
                                                   const std::string& path);
  // An array of distinct items from the finite set `item` allows (an enum of scalars,
  // booleans, null), with minItems/maxItems (-1: none); kUnsupported for other item schemas.
  Result<std::string> unique_array(const Json& item, long min_items, long max_items,
                                   const std::string& path);
  // An object of the members `kvs` (key, ws, colon, value; in this order, each skippable
  // unless required) and then any number of `extras` alternatives, with between min and max
  // (-1: no limit) members in all.
  Result<std::string> counted_object(const std::vector<std::string>& kvs,
                                     const std::vector<bool>& required,
                                     const std::vector<std::string>& extras, long min, long max,
                                     const std::string& path);
  // The keys `propertyNames` admits (nullopt: any).
  Result<std::optional<CharDfa>> property_names(const Json& names, const std::string& path);
  Result<std::string> key_not_in(const std::vector<std::string>& names, const std::string& path);

  // `schema` with `not`, `if`/`then`/`else` and the dependency keywords rewritten into allOf /
  // anyOf of schemas the grammar enforces (json_schema_negate.cc).
  Result<Json> rewrite_conditionals(const Json& schema, const std::string& path);
  // A schema valid exactly where `schema` is invalid; kUnsupported when a keyword has no
  // negation the grammar can express.
  Result<Json> negate(const Json& schema, const std::string& path, int depth);
  // An object schema with `$strata:someKeyOutside` {names, patterns, schema} (a negated
  // additionalProperties): it must also hold a member whose key is none of `names`, matches
  // none of `patterns`, and whose value satisfies `schema`. Written as the anyOf of the ways:
  // one of its declared or required properties, or (`$strata:oneExtra`, object_grammar) one
  // more additional member.
  Result<std::string> object_with_key_outside(const Json& schema, const std::string& path);
  // oneOf: branch i of `branches` and no other branch it may share a value with.
  // `branch` (the i-th, merged with the schema's other keywords) minus the `raw` branches
  // listed in `overlapping`.
  Result<std::string> exclusive_branch(const Json& branch, const std::vector<Json>& raw, size_t i,
                                       const std::vector<size_t>& overlapping,
                                       const std::string& path);
  // Whether an enum/const member passes the schema's string and number keywords (pattern,
  // format, lengths, bounds, and the internal negations).
  Result<bool> scalar_keywords_allow(const Json& schema, const Json& value,
                                     const std::string& path);
  // The grammar of `type` values when `$strata:notEnum` excludes some of them ("" when it
  // excludes none).
  Result<std::string> excluded_values(const Json& schema, const std::string& type,
                                      const std::string& path);

  // Whether no value can be valid under both schemas (as far as types, const/enum and
  // required properties show); false when unsure.
  Result<bool> disjoint(const Json& a, const Json& b, const std::string& path, int depth);
  // allOf: one schema that asks for both (properties merged, bounds tightened, ...).
  Result<Json> merge(const Json& a, const Json& b, const std::string& path);
  // `schema` with a top-level $ref replaced by its target (and $ref siblings merged in).
  Result<Json> inline_ref(const Json& schema, const std::string& path);
  Result<const Json*> resolve_ref(const std::string& ref, const std::string& path);
  void index_ids(const Json& schema);

  // A keyword the grammar cannot enforce: an error, or nothing under best_effort.
  Status unenforceable(const std::string& what, const std::string& path) const;
  bool has_validation_keywords(const Json& schema) const;

  std::string new_rule(const std::string& hint);
  // A rule whose array items the matcher keeps distinct (kUniqueArrayRulePrefix, grammar.h).
  std::string new_unique_array_rule();
  void set_rule(const std::string& name, std::string body);

  Json root_;
  JsonSchemaOptions options_;
  CompileMeter own_meter_;
  CompileMeter* meter_;
  Draft draft_ = Draft::k2020;
  std::vector<std::pair<std::string, std::string>> rules_;  // name, body (written order)
  std::unordered_map<std::string, size_t> rule_index_;
  // Per rule-name stem, the next numeric suffix to try, so that thousands of rules from one
  // hint ("s-after", "s-after-2", ...) are named in constant time each, not by probing from 2.
  std::unordered_map<std::string, int> next_suffix_;
  std::set<std::string> base_written_;
  std::unordered_map<std::string, std::string> memo_;  // schema text -> rule name
  // Declared names (sorted) -> the grammar of a key other than them: objects that declare the
  // same properties in many branches (chrome-manifest: 40 copies of a 500-rule trie) share one.
  std::map<std::vector<std::string>, std::string> keys_not_in_;
  std::map<std::string, const Json*> ids_;  // $id / id / $anchor -> schema
  int depth_ = 0;
  size_t grammar_bytes_ = 0;
};

}  // namespace strata::grammar::json_schema_detail
