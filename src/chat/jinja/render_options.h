// Limits and inputs of one template render.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <optional>

namespace strata::jinja {

struct RenderOptions {
  // Nested macro calls (recursive macros included) before the render fails.
  int max_recursion_depth = 64;
  // for-loop iterations summed over the whole render (range() sizes count too).
  int64_t max_loop_iterations = 1'000'000;
  // Size of the rendered text, and of any single string or list a template builds.
  size_t max_output_bytes = 16u << 20;
  // Evaluation steps (expressions evaluated plus elements copied) over the whole render, so that
  // templates with quadratic work fail instead of hanging.
  int64_t max_steps = 20'000'000;
  // The time strftime_now() formats, as a broken-down local time; unset = now, local time zone
  // (what transformers does). Tests pin it.
  std::optional<std::tm> now;
};

}  // namespace strata::jinja
