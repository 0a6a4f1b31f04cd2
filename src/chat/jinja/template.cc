#include "chat/jinja/template.h"

#include "chat/jinja/interpreter.h"
#include "chat/jinja/lexer.h"
#include "chat/jinja/parser.h"
#include "strata/json_depth.h"

namespace strata::jinja {

Result<Template> Template::parse(std::string_view source) {
  STRATA_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
  STRATA_ASSIGN_OR_RETURN(StmtList body, parse_template(std::move(tokens)));
  return Template(std::make_shared<const StmtList>(std::move(body)));
}

Result<std::string> Template::render(const nlohmann::ordered_json& context,
                                     const RenderOptions& options) const {
  if (!context.is_object() && !context.is_null())
    return make_error(ErrorCode::kInvalidArgument, "template context must be a JSON object");
  Dict variables;
  if (context.is_object()) {
    for (const auto& [key, item] : context.items()) {
      STRATA_ASSIGN_OR_RETURN(Value v, Value::from_json(item));
      variables.items.emplace_back(Value::string(key), std::move(v));
    }
  }
  Interpreter interpreter(options);
  return interpreter.render(*body_, variables);
}

Result<std::string> Template::render(const nlohmann::json& context,
                                     const RenderOptions& options) const {
  if (json_deeper_than(context, kMaxJsonDepth))
    return make_error(ErrorCode::kInvalidArgument,
                      "template context nests deeper than " + std::to_string(kMaxJsonDepth) +
                          " levels of arrays and objects; flatten the JSON passed to the template");
  // dump() with replacement so invalid UTF-8 in the caller's strings cannot throw.
  auto ordered = nlohmann::ordered_json::parse(
      context.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), nullptr,
      /*allow_exceptions=*/false);
  return render(ordered, options);
}

}  // namespace strata::jinja
