// Unicode data for BERT's normalizer and pre-tokenizer (generated into bert_tables.cc by
// tools/gen_bert_tables.py).
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::tokenizer::bert {

// Character classes BERT treats specially; code points in no range are ordinary.
enum CharClass : uint8_t { kOrdinary = 0, kSpace = 1, kControl = 2, kPunct = 3 };

struct ClassRange {
  uint32_t first;
  uint32_t last;
  CharClass cls;
};

// strip_accents + lowercase of one code point: NFD, nonspacing marks dropped, lowercased. `to`
// ends at the first 0 (an empty `to` deletes the code point).
struct Mapping {
  uint32_t cp;
  uint32_t to[4];
};

extern const ClassRange kClassRanges[];  // sorted, disjoint
extern const size_t kClassRangeCount;
extern const Mapping kMappings[];  // sorted by cp
extern const size_t kMappingCount;

}  // namespace strata::tokenizer::bert
