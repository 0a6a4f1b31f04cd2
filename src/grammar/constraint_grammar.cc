#include "grammar/constraint_grammar.h"

#include <string>

#include "grammar/json_schema.h"

namespace strata::grammar {

Result<std::shared_ptr<const Grammar>> grammar_for_constraint(const OutputConstraint& constraint,
                                                              CompileMeter* meter) {
  if (meter) {
    meter->set_subject(constraint.kind == ConstraintKind::kGrammar ? "the grammar"
                                                                   : "the JSON schema");
  }
  std::string gbnf;
  std::string root = constraint.root.empty() ? "root" : constraint.root;
  switch (constraint.kind) {
    case ConstraintKind::kNone:
      return make_error(ErrorCode::kInvalidArgument, "no constraint to compile");
    case ConstraintKind::kGrammar:
      gbnf = constraint.text;
      break;
    case ConstraintKind::kJsonSchema: {
      JsonSchemaOptions options;
      options.best_effort = constraint.best_effort;
      options.assert_formats = constraint.formats == FormatPolicy::kAssert;
      STRATA_ASSIGN_OR_RETURN(gbnf, json_schema_to_gbnf(constraint.text, options, meter));
      root = "root";
      break;
    }
    case ConstraintKind::kJsonObject:
      gbnf = json_object_gbnf();
      root = "root";
      break;
  }
  return parse_gbnf(gbnf, root, meter);
}

}  // namespace strata::grammar
