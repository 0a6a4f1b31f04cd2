// libFuzzer target: the input is a JSON Schema. json_schema_to_gbnf (strict and best effort) must
// never crash or hang, and whenever it returns a grammar, that grammar must load (parse_gbnf:
// syntax, defined rules, no left recursion, every rule matches some finite text). Errors returned
// as Result (kUnsupported, kInvalidArgument) are expected.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view schema(reinterpret_cast<const char*>(data), size);
  for (bool best_effort : {false, true}) {
    strata::grammar::JsonSchemaOptions options;
    options.best_effort = best_effort;
    auto gbnf = strata::grammar::json_schema_to_gbnf(schema, options);
    if (!gbnf.ok()) continue;
    auto grammar = strata::grammar::parse_gbnf(*gbnf);
    if (!grammar.ok()) {
      std::fprintf(stderr, "converter output does not load: %s\n%s\n",
                   grammar.error().message.c_str(), gbnf->c_str());
      std::abort();
    }
  }
  return 0;
}
