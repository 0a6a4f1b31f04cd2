// A parsed Jinja chat template, rendered in a sandbox the way Hugging Face transformers renders
// `tokenizer.chat_template` (jinja2 ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/render_options.h"

namespace strata::jinja {

class Template {
 public:
  // Parses template source; errors name the line ("line 3: unexpected end of template, ...").
  static Result<Template> parse(std::string_view source);

  // Renders with `context` (a JSON object) as the template's variables. Object key order is
  // kept, which `tojson` and dict iteration rely on, hence ordered_json.
  Result<std::string> render(const nlohmann::ordered_json& context,
                             const RenderOptions& options) const;
  // Convenience for callers holding nlohmann::json (whose objects are key-sorted).
  Result<std::string> render(const nlohmann::json& context, const RenderOptions& options) const;

 private:
  explicit Template(std::shared_ptr<const StmtList> body) : body_(std::move(body)) {}
  std::shared_ptr<const StmtList> body_;
};

}  // namespace strata::jinja
