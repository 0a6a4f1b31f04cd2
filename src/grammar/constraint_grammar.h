// The grammar an OutputConstraint stands for: GBNF as given, a JSON Schema or any JSON object
// through the JSON-Schema front end. One place for the engine and the public facade.
#pragma once

#include <memory>

#include "base/result.h"
#include "grammar/compile_meter.h"
#include "grammar/grammar.h"
#include "strata/output_constraint.h"

namespace strata::grammar {

// kNone is an error (there is nothing to compile). `meter`, when given, is charged for the
// JSON-Schema conversion and the GBNF build (and names what is compiled in its messages).
Result<std::shared_ptr<const Grammar>> grammar_for_constraint(const OutputConstraint& constraint,
                                                              CompileMeter* meter = nullptr);

}  // namespace strata::grammar
