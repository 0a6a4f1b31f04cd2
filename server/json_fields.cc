#include "server/json_fields.h"

#include <cmath>
#include <limits>
#include <utility>

#include "strata/json_depth.h"

namespace strata::server {
namespace {

std::string format_number(double d) {
  std::string s = std::to_string(d);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

RequestError field_error(const std::string& field, const std::string& what) {
  return {make_error(ErrorCode::kInvalidArgument, "'" + field + "' " + what), field};
}

void Fields::number(const std::string& name, float& out, double lo, double hi) {
  const json* v = find(name);
  if (!v) return;
  if (!v->is_number()) return fail(field_error(name, "must be a number"));
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return fail(
        field_error(name, "must be between " + format_number(lo) + " and " + format_number(hi)));
  }
  out = static_cast<float>(d);
}

void Fields::boolean(const std::string& name, bool& out) {
  const json* v = find(name);
  if (!v) return;
  if (!v->is_boolean()) return fail(field_error(name, "must be a boolean"));
  out = v->get<bool>();
}

void Fields::string(const std::string& name, std::string& out) {
  const json* v = find(name);
  if (!v) return;
  if (!v->is_string()) return fail(field_error(name, "must be a string"));
  out = v->get<std::string>();
}

std::variant<json, RequestError> parse_object(std::string_view body) {
  if (const size_t depth = json_nesting_depth(body); depth > kMaxJsonDepth) {
    return RequestError{
        make_error(ErrorCode::kInvalidArgument, "the request body nests " + std::to_string(depth) +
                                                    " levels deep, more than the " +
                                                    std::to_string(kMaxJsonDepth) + " accepted"),
        ""};
  }
  json root = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return RequestError{make_error(ErrorCode::kInvalidArgument,
                                   "the request body is not valid JSON (UTF-8 text expected)"),
                        ""};
  }
  if (!root.is_object()) {
    return RequestError{
        make_error(ErrorCode::kInvalidArgument, "the request body must be a JSON object"), ""};
  }
  return root;
}

bool token_id(const json& v, TokenId& out) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<TokenId>::max()))
      return false;
  } else if (v.get<int64_t>() < 0 || v.get<int64_t>() > std::numeric_limits<TokenId>::max()) {
    return false;
  }
  out = static_cast<TokenId>(v.get<int64_t>());
  return true;
}

std::optional<std::vector<TokenId>> token_list(const json& v) {
  std::vector<TokenId> ids;
  for (const json& t : v) {
    TokenId id;
    if (!token_id(t, id)) return std::nullopt;
    ids.push_back(id);
  }
  return ids;
}

void parse_prompt_inputs(Fields& f, const std::string& name, std::vector<PromptInput>& out) {
  const json* p = f.find(name);
  if (!p) return f.fail(field_error(name, "is required"));
  const char* kShape =
      "must be a string, an array of strings, an array of token ids or an array of such arrays";
  if (p->is_string()) {
    out.push_back({false, p->get<std::string>(), {}});
    return;
  }
  if (!p->is_array() || p->empty()) return f.fail(field_error(name, kShape));
  if ((*p)[0].is_number()) {
    std::optional<std::vector<TokenId>> ids = token_list(*p);
    if (!ids) return f.fail(field_error(name, "token ids must be non-negative integers"));
    out.push_back({true, "", std::move(*ids)});
    return;
  }
  for (const json& item : *p) {
    if (item.is_string()) {
      out.push_back({false, item.get<std::string>(), {}});
    } else if (item.is_array() && !item.empty()) {
      std::optional<std::vector<TokenId>> ids = token_list(item);
      if (!ids) return f.fail(field_error(name, "token ids must be non-negative integers"));
      out.push_back({true, "", std::move(*ids)});
    } else {
      return f.fail(field_error(name, kShape));
    }
  }
}

void respond_json(HttpExchange& exchange, const json& body) {
  exchange.respond(
      {200, "application/json", {}, body.dump(-1, ' ', false, json::error_handler_t::replace)});
}

}  // namespace strata::server
