// JSON bodies. Reading requests: one JSON object with a depth limit, its fields with type and
// range checks that report the first problem as a RequestError naming the field, and the prompt
// forms the OpenAI API accepts (completions' `prompt`, embeddings' `input`). Writing a 200 answer.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/http_exchange.h"
#include "server/openai_request.h"

namespace strata::server {

using nlohmann::json;

RequestError field_error(const std::string& field, const std::string& what);

// The body as a JSON object, or why not (invalid JSON, nested past kMaxJsonDepth, not an object).
std::variant<json, RequestError> parse_object(std::string_view body);

// Reads the fields of one JSON object. Each getter leaves its output alone when the field is
// absent or null and records the first type or range error; callers check error() at the end.
class Fields {
 public:
  explicit Fields(const json& object) : object_(object) {}

  const json* find(const std::string& name) const {
    auto it = object_.find(name);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  void number(const std::string& name, float& out, double lo, double hi);

  template <typename Int>
  void integer(const std::string& name, Int& out, int64_t lo, int64_t hi) {
    const json* v = find(name);
    if (!v) return;
    if (!v->is_number_integer()) return fail(field_error(name, "must be an integer"));
    // Non-negative integers parse as unsigned; above INT64_MAX they fit no field here.
    const bool in_range = v->is_number_unsigned()
                              ? v->get<uint64_t>() <= static_cast<uint64_t>(hi) &&
                                    static_cast<int64_t>(v->get<uint64_t>()) >= lo
                              : v->get<int64_t>() >= lo && v->get<int64_t>() <= hi;
    if (!in_range) {
      return fail(field_error(
          name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi)));
    }
    out = static_cast<Int>(v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>())
                                                   : v->get<int64_t>());
  }

  void boolean(const std::string& name, bool& out);
  void string(const std::string& name, std::string& out);

  void fail(RequestError e) {
    if (!error_) error_ = std::move(e);
  }
  const std::optional<RequestError>& error() const { return error_; }

 private:
  const json& object_;
  std::optional<RequestError> error_;
};

// A token id: an integer in [0, INT32_MAX].
bool token_id(const json& v, TokenId& out);
std::optional<std::vector<TokenId>> token_list(const json& v);

// The required field `name` as prompts: a string, an array of strings, an array of token ids or
// an array of such arrays (one PromptInput each). Failures go to f.
void parse_prompt_inputs(Fields& f, const std::string& name, std::vector<PromptInput>& out);

// Answers 200 with `body` (invalid UTF-8 in strings replaced, never thrown on).
void respond_json(HttpExchange& exchange, const json& body);

}  // namespace strata::server
