#include "server/openai_response.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

namespace strata::server {
namespace {

using json = nlohmann::ordered_json;

// Token texts may be partial UTF-8 characters; invalid bytes become U+FFFD rather than failing.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json bytes_of(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(c);
  return out;
}

json chat_logprobs(const std::vector<LogprobEntry>& entries) {
  json content = json::array();
  for (const LogprobEntry& e : entries) {
    json top = json::array();
    for (const auto& [token, lp] : e.top) {
      top.push_back({{"token", token}, {"logprob", lp}, {"bytes", bytes_of(token)}});
    }
    content.push_back({{"token", e.token},
                       {"logprob", e.logprob},
                       {"bytes", bytes_of(e.token)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

json completion_logprobs(const std::vector<LogprobEntry>& entries) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  for (const LogprobEntry& e : entries) {
    tokens.push_back(e.token);
    token_logprobs.push_back(e.logprob);
    json alternatives = json::object();
    for (const auto& [token, lp] : e.top) alternatives[token] = lp;
    top.push_back(alternatives);
    offsets.push_back(e.text_offset);
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top},
          {"text_offset", offsets}};
}

json logprobs_json(bool chat, const std::vector<LogprobEntry>* entries) {
  if (!entries) return nullptr;
  return chat ? chat_logprobs(*entries) : completion_logprobs(*entries);
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

// llama-server's timings: prompt_n counts the prompt tokens computed, cache_n those reused.
json timings_json(const Usage& u) {
  const Timings& t = *u.timings;
  const double prompt_n = static_cast<double>(u.prompt_tokens - u.cached_tokens);
  const double predicted_n =
      static_cast<double>(u.completion_tokens > 0 ? u.completion_tokens - 1 : 0);
  auto per_token = [](double ms, double n) { return n > 0 ? ms / n : 0.0; };
  auto per_second = [](double ms, double n) { return ms > 0 ? 1e3 * n / ms : 0.0; };
  return {{"cache_n", u.cached_tokens},
          {"prompt_n", u.prompt_tokens - u.cached_tokens},
          {"prompt_ms", t.prompt_ms},
          {"prompt_per_token_ms", per_token(t.prompt_ms, prompt_n)},
          {"prompt_per_second", per_second(t.prompt_ms, prompt_n)},
          {"predicted_n", u.completion_tokens},
          {"predicted_ms", t.predicted_ms},
          {"predicted_per_token_ms", per_token(t.predicted_ms, predicted_n)},
          {"predicted_per_second", per_second(t.predicted_ms, predicted_n)}};
}

json finish_json(FinishReason reason, bool tool_calls = false) {
  if (tool_calls && reason == FinishReason::kStop) return "tool_calls";
  const char* name = openai_finish_reason(reason);
  return name ? json(name) : json(nullptr);
}

// OpenAI's tool_calls array; with `indexed` (stream deltas) each call carries its index.
json tool_calls_json(const std::vector<ToolCall>& calls, bool indexed) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json call = {{"id", calls[i].id},
                 {"type", "function"},
                 {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (indexed) call["index"] = i;
    out.push_back(std::move(call));
  }
  return out;
}

json chunk(const ResponseHeader& h, json choices) {
  json out = {{"id", h.id},
              {"object", h.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", h.created},
              {"model", h.model},
              {"system_fingerprint", "strata"},
              {"choices", std::move(choices)}};
  if (h.include_usage) out["usage"] = nullptr;
  return out;
}

json stream_choice(const ResponseHeader& h, size_t index, json delta_or_text, json logprobs,
                   json finish) {
  json c = {{"index", index}};
  if (h.chat) {
    c["delta"] = std::move(delta_or_text);
  } else {
    c["text"] = std::move(delta_or_text);
  }
  c["logprobs"] = std::move(logprobs);
  c["finish_reason"] = std::move(finish);
  return c;
}

}  // namespace

ResponseHeader make_response_header(bool chat, std::string model, bool include_usage) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kHex = "0123456789abcdef";
  std::string id = chat ? "chatcmpl-" : "cmpl-";
  for (int i = 0; i < 24; ++i) id += kHex[rng() % 16];
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return {chat, std::move(id), std::chrono::duration_cast<std::chrono::seconds>(now).count(),
          std::move(model), include_usage};
}

const char* openai_finish_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    default:
      return nullptr;
  }
}

std::string completion_body(const ResponseHeader& h, const std::vector<ChoiceResult>& choices,
                            const Usage& usage) {
  json out_choices = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    json choice = {{"index", i}};
    if (h.chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
      if (!c.tool_calls.empty()) {
        if (c.text.empty()) choice["message"]["content"] = nullptr;
        choice["message"]["tool_calls"] = tool_calls_json(c.tool_calls, false);
      }
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = logprobs_json(h.chat, c.has_logprobs ? &c.logprobs : nullptr);
    choice["finish_reason"] = finish_json(c.finish, !c.tool_calls.empty());
    out_choices.push_back(std::move(choice));
  }
  json out = {{"id", h.id},
              {"object", h.chat ? "chat.completion" : "text_completion"},
              {"created", h.created},
              {"model", h.model},
              {"system_fingerprint", "strata"},
              {"choices", std::move(out_choices)},
              {"usage", usage_json(usage)}};
  if (usage.timings) out["timings"] = timings_json(usage);
  return dump(out);
}

std::string role_chunk(const ResponseHeader& h, size_t choice) {
  json delta = {{"role", "assistant"}, {"content", ""}};
  return dump(chunk(h, json::array({stream_choice(h, choice, delta, nullptr, nullptr)})));
}

std::string text_chunk(const ResponseHeader& h, size_t choice, const std::string& text,
                       const std::vector<LogprobEntry>* logprobs) {
  json body = h.chat ? json{{"content", text}} : json(text);
  return dump(chunk(h, json::array({stream_choice(h, choice, std::move(body),
                                                  logprobs_json(h.chat, logprobs), nullptr)})));
}

std::string finish_chunk(const ResponseHeader& h, size_t choice, FinishReason finish,
                         bool tool_calls) {
  json body = h.chat ? json::object() : json("");
  return dump(chunk(h, json::array({stream_choice(h, choice, std::move(body), nullptr,
                                                  finish_json(finish, tool_calls))})));
}

std::string tool_call_deltas_chunk(const ResponseHeader& h, size_t choice,
                                   const std::vector<ToolCallStream::CallDelta>& calls,
                                   const std::vector<std::string>& ids) {
  json pieces = json::array();
  for (const ToolCallStream::CallDelta& c : calls) {
    json piece = {{"index", c.index}};
    if (c.first) {
      piece["id"] = ids[c.index];
      piece["type"] = "function";
      piece["function"] = {{"name", c.name}, {"arguments", c.arguments}};
    } else {
      piece["function"] = {{"arguments", c.arguments}};
    }
    pieces.push_back(std::move(piece));
  }
  json delta = {{"tool_calls", std::move(pieces)}};
  return dump(
      chunk(h, json::array({stream_choice(h, choice, std::move(delta), nullptr, nullptr)})));
}

std::string usage_chunk(const ResponseHeader& h, const Usage& usage) {
  json out = chunk(h, json::array());
  out["usage"] = usage_json(usage);
  if (usage.timings) out["timings"] = timings_json(usage);
  return dump(out);
}

std::string sse_event(const std::string& json_text) { return "data: " + json_text + "\n\n"; }

}  // namespace strata::server
