// libFuzzer target: the input is a Jinja template; it is parsed and, when that succeeds, rendered
// with a small fixed chat context under tight limits. Any crash, sanitizer report, hang or
// runaway allocation is a bug; errors returned as Result are expected.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "chat/jinja/template.h"

namespace {

const nlohmann::ordered_json& fixed_context() {
  static const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hi \u00e9 \ud83e\udd99"}]},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "f", "arguments": {"x": 1.5, "y": [true, null]}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "{\"ok\": 1}"}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "documents": null,
    "add_generation_prompt": true,
    "bos_token": "<s>",
    "eos_token": "</s>"
  })");
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = strata::jinja::Template::parse(source);
  if (!tmpl.ok()) return 0;
  strata::jinja::RenderOptions options;
  options.max_recursion_depth = 32;
  options.max_loop_iterations = 20'000;
  options.max_output_bytes = 1 << 20;
  options.max_steps = 2'000'000;
  std::tm now{};
  now.tm_year = 125;
  now.tm_mday = 15;
  options.now = now;
  auto result = tmpl->render(fixed_context(), options);
  (void)result;
  return 0;
}
