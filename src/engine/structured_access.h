// The implementations behind the public structured-output classes (strata/structured.h), for the
// code that builds them; kept out of include/ so that the public headers show no internals.
#pragma once

#include "strata/structured.h"

namespace strata::internal {

struct StructuredAccess {
  static const ConstraintVocabulary::Impl& impl(const ConstraintVocabulary& vocabulary) {
    return *vocabulary.impl_;
  }
  static const CompiledConstraint::Impl& impl(const CompiledConstraint& constraint) {
    return *constraint.impl_;
  }
};

}  // namespace strata::internal
