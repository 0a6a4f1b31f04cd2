// The names of the public API's enums, and back (speculation kinds, poolings): plain string
// functions with no engine behind them, so request parsers can be built and fuzzed alone.
#include "strata/engine.h"

namespace strata {

const char* speculation_kind_name(SpeculationKind kind) {
  switch (kind) {
    case SpeculationKind::kNgram:
      return "ngram";
    case SpeculationKind::kDraft:
      return "draft";
    case SpeculationKind::kNone:
      break;
  }
  return "none";
}

Result<SpeculationKind> parse_speculation_kind(std::string_view name) {
  for (SpeculationKind k :
       {SpeculationKind::kNone, SpeculationKind::kNgram, SpeculationKind::kDraft}) {
    if (name == speculation_kind_name(k)) return k;
  }
  return make_error(
      ErrorCode::kInvalidArgument,
      "unknown speculative decoding '" + std::string(name) + "': use none, ngram or draft");
}

const char* pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kLast:
      return "last";
    case Pooling::kNone:
      break;
  }
  return "none";
}

Result<Pooling> parse_pooling(std::string_view name) {
  for (Pooling p : {Pooling::kNone, Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    if (name == pooling_name(p)) return p;
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown pooling '" + std::string(name) + "': use none, mean, cls or last");
}

}  // namespace strata
