#include "server/openai_request.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "server/json_fields.h"
#include "strata/json_depth.h"

namespace strata::server {
namespace {

void parse_stop(Fields& f, std::vector<std::string>& stop) {
  const json* v = f.find("stop");
  if (!v) return;
  constexpr size_t kMaxStops = 16;
  if (v->is_string()) {
    if (!v->get<std::string>().empty()) stop.push_back(v->get<std::string>());
    return;
  }
  if (!v->is_array()) return f.fail(field_error("stop", "must be a string or a list of strings"));
  if (v->size() > kMaxStops) {
    return f.fail(
        field_error("stop", "may hold at most " + std::to_string(kMaxStops) + " strings"));
  }
  for (const json& s : *v) {
    if (!s.is_string()) return f.fail(field_error("stop", "must be a string or a list of strings"));
    if (!s.get<std::string>().empty()) stop.push_back(s.get<std::string>());
  }
}

void parse_logit_bias(Fields& f, std::map<TokenId, float>& bias) {
  const json* v = f.find("logit_bias");
  if (!v) return;
  if (!v->is_object()) {
    return f.fail(field_error("logit_bias", "must be an object mapping token ids to numbers"));
  }
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    char* end = nullptr;
    errno = 0;
    const long id = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || errno != 0 || id < 0 ||
        id > std::numeric_limits<TokenId>::max()) {
      return f.fail(field_error("logit_bias", "keys must be token ids (\"" + key + "\" is not)"));
    }
    if (!it.value().is_number()) {
      return f.fail(field_error("logit_bias", "values must be numbers"));
    }
    const double b = it.value().get<double>();
    if (!(b >= -100.0 && b <= 100.0)) {
      return f.fail(field_error("logit_bias", "values must be between -100 and 100"));
    }
    bias[static_cast<TokenId>(id)] = static_cast<float>(b);
  }
}

void parse_constraint(Fields& f, OutputConstraint& c) {
  if (const json* g = f.find("grammar")) {
    if (!g->is_string()) return f.fail(field_error("grammar", "must be a string (GBNF)"));
    c.kind = ConstraintKind::kGrammar;
    c.text = g->get<std::string>();
  }
  const json* rf = f.find("response_format");
  if (!rf) return;
  if (!rf->is_object()) return f.fail(field_error("response_format", "must be an object"));
  auto type = rf->find("type");
  if (type == rf->end() || !type->is_string()) {
    return f.fail(field_error("response_format.type", "must be a string"));
  }
  const std::string t = type->get<std::string>();
  if (t == "text") return;
  if (c.kind != ConstraintKind::kNone) {
    return f.fail(field_error("response_format", "cannot be combined with 'grammar'"));
  }
  if (t == "json_object") {
    c.kind = ConstraintKind::kJsonObject;
    return;
  }
  if (t != "json_schema") {
    return f.fail(field_error("response_format.type",
                              "must be \"text\", \"json_object\" or \"json_schema\""));
  }
  auto js = rf->find("json_schema");
  if (js == rf->end() || !js->is_object()) {
    return f.fail(field_error("response_format.json_schema", "must be an object"));
  }
  auto schema = js->find("schema");
  if (schema == js->end() || !(schema->is_object() || schema->is_boolean())) {
    return f.fail(
        field_error("response_format.json_schema.schema", "must be a JSON Schema object"));
  }
  c.kind = ConstraintKind::kJsonSchema;
  c.text = schema->dump();
  // strata's extension: "json_schema_formats": "assert" (default) or "annotate".
  if (const json* formats = f.find("json_schema_formats")) {
    if (*formats == "annotate") {
      c.formats = FormatPolicy::kAnnotate;
    } else if (*formats != "assert") {
      return f.fail(field_error("json_schema_formats", "must be \"assert\" or \"annotate\""));
    }
  }
}

// strata's extension: the request's own sparse attention (docs/sparse-attention.md), "attn":
// "dense" or "sparse", and "attn_budget" / "attn_window" / "attn_sinks" in positions.
void parse_attention(Fields& f, SparseAttentionOverride& a) {
  constexpr int64_t kMaxPositions = 1 << 24;
  if (f.find("attn")) {
    std::string mode;
    f.string("attn", mode);
    if (mode == "dense" || mode == "sparse") {
      a.enabled = mode == "sparse";
    } else if (!f.error()) {
      f.fail(field_error("attn", "must be \"dense\" or \"sparse\""));
    }
  }
  for (auto [name, field] : {std::pair{"attn_budget", &a.budget},
                             {"attn_window", &a.window},
                             {"attn_sinks", &a.sinks}}) {
    if (!f.find(name)) continue;
    int value = 0;
    f.integer(name, value, std::string_view(name) == "attn_sinks" ? 0 : 1, kMaxPositions);
    *field = value;
  }
}

// strata's extension, in llama-server's words: "speculative": {"type": "none" | "ngram",
// "n_max": guesses per step at most}, each field overriding the server's --spec / --draft-max
// for this request.
void parse_speculative(Fields& f, GenerationRequest& g) {
  const json* v = f.find("speculative");
  if (!v) return;
  if (!v->is_object()) {
    return f.fail(field_error("speculative", "must be an object with \"type\" and \"n_max\""));
  }
  if (auto type = v->find("type"); type != v->end() && !type->is_null()) {
    Result<SpeculationKind> kind = type->is_string()
                                       ? parse_speculation_kind(type->get<std::string>())
                                       : make_error(ErrorCode::kInvalidArgument, "");
    if (!kind.ok()) {
      return f.fail(field_error("speculative.type", "must be \"none\", \"ngram\" or \"draft\""));
    }
    g.speculation = *kind;
  }
  if (auto n_max = v->find("n_max"); n_max != v->end() && !n_max->is_null()) {
    if (!n_max->is_number_integer() || n_max->get<int64_t>() < 0 ||
        n_max->get<int64_t>() > kMaxDraft) {
      return f.fail(field_error("speculative.n_max",
                                "must be an integer from 0 to " + std::to_string(kMaxDraft)));
    }
    g.max_draft = static_cast<int>(n_max->get<int64_t>());
  }
}

// Fields chat and completions share.
void parse_common(Fields& f, CompletionRequest& r) {
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  SamplingOptions& s = r.generation.sampling;
  f.string("model", r.model);
  int max_tokens = 0;
  bool has_max = f.find("max_tokens") || f.find("max_completion_tokens");
  f.integer("max_tokens", max_tokens, 1, kIntMax);
  f.integer("max_completion_tokens", max_tokens, 1, kIntMax);
  if (has_max) r.max_tokens = max_tokens;
  f.number("temperature", s.temperature, 0.0, 2.0);
  f.number("top_p", s.top_p, 0.0, 1.0);
  f.number("presence_penalty", s.presence_penalty, -2.0, 2.0);
  f.number("frequency_penalty", s.frequency_penalty, -2.0, 2.0);
  f.integer("top_k", s.top_k, 0, kIntMax);
  f.number("min_p", s.min_p, 0.0, 1.0);
  f.number("repeat_penalty", s.repeat_penalty, 0.0, 10.0);
  // 0 is inside the ranges above but means nothing to the sampler (an empty nucleus, a division
  // by zero): refused here, naming the field, rather than deep in the engine.
  if (f.find("top_p") && s.top_p <= 0.0f) {
    f.fail(field_error("top_p", "must be greater than 0 and at most 1 (1 keeps every token)"));
  }
  if (f.find("repeat_penalty") && s.repeat_penalty <= 0.0f) {
    f.fail(field_error("repeat_penalty", "must be greater than 0 (1 is no penalty)"));
  }
  if (f.find("seed")) {
    int64_t seed = 0;
    f.integer("seed", seed, std::numeric_limits<int64_t>::min(),
              std::numeric_limits<int64_t>::max());
    s.seed = static_cast<uint64_t>(seed);
    r.seeded = true;
  }
  f.integer("n", r.n, 1, kMaxChoices);
  f.boolean("stream", r.stream);
  if (const json* so = f.find("stream_options")) {
    if (!so->is_object()) {
      f.fail(field_error("stream_options", "must be an object"));
    } else {
      Fields options(*so);
      options.boolean("include_usage", r.include_usage);
      if (options.error()) {
        f.fail(field_error("stream_options.include_usage", "must be a boolean"));
      }
    }
  }
  std::string user;
  f.string("user", user);
  f.boolean("ignore_eos", r.generation.ignore_eos);
  parse_stop(f, r.generation.stop);
  parse_logit_bias(f, s.logit_bias);
  parse_constraint(f, r.generation.constraint);
  parse_attention(f, r.generation.attention);
  // Requests with different salts never share cached prompt pages (vLLM's extension).
  f.string("cache_salt", r.generation.cache_salt);
  parse_speculative(f, r.generation);
}

// OpenAI content: a string, or an array of parts of which strata reads the text ones.
std::optional<std::string> message_text(const json& content, size_t index, Fields& f) {
  const std::string field = "messages[" + std::to_string(index) + "].content";
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return std::string();
  if (!content.is_array()) {
    f.fail(field_error(field, "must be a string or an array of content parts"));
    return std::nullopt;
  }
  std::string text;
  for (const json& part : content) {
    auto type = part.is_object() ? part.find("type") : part.end();
    if (!part.is_object() || type == part.end() || !type->is_string()) {
      f.fail(field_error(field, "parts must be objects with a string 'type'"));
      return std::nullopt;
    }
    if (type->get<std::string>() != "text") {
      f.fail({make_error(ErrorCode::kUnsupported, "'" + field + "' part type \"" +
                                                      type->get<std::string>() +
                                                      "\" is not supported; only \"text\""),
              field});
      return std::nullopt;
    }
    auto t = part.find("text");
    if (t == part.end() || !t->is_string()) {
      f.fail(field_error(field, "text parts need a string 'text'"));
      return std::nullopt;
    }
    text += t->get<std::string>();
  }
  return text;
}

// The fields of tool turns templates read: an assistant's `tool_calls` (arguments given as a
// JSON string become an object, as chat templates expect) and a tool reply's `tool_call_id`
// and `name`.
bool copy_tool_fields(const json& m, const std::string& field, json& message, Fields& f) {
  if (auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
    if (!calls->is_array()) {
      f.fail(field_error(field + ".tool_calls", "must be an array"));
      return false;
    }
    json copied = *calls;
    for (json& call : copied) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
        f.fail(field_error(field + ".tool_calls", "entries must be {\"function\": {...}}"));
        return false;
      }
      json& fn = call["function"];
      if (fn.contains("arguments") && fn["arguments"].is_string()) {
        const std::string text = fn["arguments"].get<std::string>();
        // The string escaped the body's depth check; parsed, it would nest inside the message.
        if (json_nesting_depth(text) > kMaxJsonDepth) {
          f.fail(field_error(field + ".tool_calls", "function arguments nest deeper than " +
                                                        std::to_string(kMaxJsonDepth) + " levels"));
          return false;
        }
        json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (!parsed.is_discarded()) fn["arguments"] = std::move(parsed);
      }
    }
    message["tool_calls"] = std::move(copied);
  }
  for (const char* key : {"tool_call_id", "name"}) {
    if (auto v = m.find(key); v != m.end() && v->is_string()) message[key] = *v;
  }
  return true;
}

void parse_tools(Fields& f, CompletionRequest& r) {
  const json* tools = f.find("tools");
  if (tools) {
    if (!tools->is_array()) return f.fail(field_error("tools", "must be an array of tools"));
    if (!tools->empty()) r.tools_json = tools->dump();
  }
  if (const json* choice = f.find("tool_choice")) {
    if (choice->is_string()) {
      const std::string mode = choice->get<std::string>();
      if (mode == "none") {
        r.tool_choice.mode = ToolChoiceMode::kNone;
      } else if (mode == "auto") {
        r.tool_choice.mode = ToolChoiceMode::kAuto;
      } else if (mode == "required") {
        r.tool_choice.mode = ToolChoiceMode::kRequired;
      } else {
        return f.fail(field_error("tool_choice", "must be none, auto, required or an object"));
      }
    } else if (choice->is_object() && choice->contains("function") &&
               (*choice)["function"].is_object() && (*choice)["function"].contains("name") &&
               (*choice)["function"]["name"].is_string()) {
      r.tool_choice = {ToolChoiceMode::kFunction, (*choice)["function"]["name"].get<std::string>()};
    } else {
      return f.fail(field_error("tool_choice",
                                "must be none, auto, required or {\"type\": \"function\", "
                                "\"function\": {\"name\": ...}}"));
    }
    if (r.tool_choice.mode != ToolChoiceMode::kNone && r.tools_json.empty()) {
      return f.fail(field_error("tool_choice", "needs 'tools'"));
    }
  }
  f.boolean("parallel_tool_calls", r.parallel_tool_calls);
  if (r.uses_tools() && r.generation.constraint.kind != ConstraintKind::kNone) {
    return f.fail(field_error("tools", "cannot be combined with 'response_format' or 'grammar'"));
  }
}

void parse_messages(Fields& f, CompletionRequest& r) {
  const json* messages = f.find("messages");
  if (!messages) return f.fail(field_error("messages", "is required"));
  if (!messages->is_array() || messages->empty()) {
    return f.fail(field_error("messages", "must be a non-empty array of messages"));
  }
  // OpenAI's own limit. Past it a conversation is an attack on the template renderer (a Jinja
  // value per message) rather than a chat.
  if (messages->size() > kMaxMessages) {
    return f.fail(field_error("messages", "may hold at most " + std::to_string(kMaxMessages) +
                                              " messages (it has " +
                                              std::to_string(messages->size()) + ")"));
  }
  json out = json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return f.fail(field_error(field, "must be an object"));
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      return f.fail(field_error(field + ".role", "must be a string"));
    }
    const std::string r_name = role->get<std::string>();
    if (r_name != "system" && r_name != "user" && r_name != "assistant" && r_name != "tool" &&
        r_name != "developer") {
      return f.fail(
          field_error(field + ".role", "must be system, developer, user, assistant or tool"));
    }
    auto content = m.find("content");
    if (content == m.end() && r_name != "assistant") {
      return f.fail(field_error(field + ".content", "is required"));
    }
    std::optional<std::string> text =
        content == m.end() ? std::string() : message_text(*content, i, f);
    if (!text) return;
    json message = {{"role", r_name == "developer" ? "system" : r_name}, {"content", *text}};
    if (!copy_tool_fields(m, field, message, f)) return;
    out.push_back(std::move(message));
  }
  r.messages_json = out.dump(-1, ' ', false, json::error_handler_t::replace);
}

void parse_prompt(Fields& f, CompletionRequest& r) {
  parse_prompt_inputs(f, "prompt", r.prompts);
  if (r.prompts.size() * static_cast<size_t>(r.n) > kMaxChoices) {
    f.fail(
        field_error("prompt", "prompts times 'n' must be at most " + std::to_string(kMaxChoices)));
  }
}

}  // namespace

std::variant<CompletionRequest, RequestError> parse_chat_request(std::string_view body,
                                                                 const SamplingOptions& defaults) {
  std::variant<json, RequestError> root = parse_object(body);
  if (auto* e = std::get_if<RequestError>(&root)) return *e;
  Fields f(std::get<json>(root));
  CompletionRequest r;
  r.generation.sampling = defaults;
  r.chat = true;
  parse_common(f, r);
  parse_messages(f, r);
  parse_tools(f, r);
  bool logprobs = false;
  f.boolean("logprobs", logprobs);
  f.integer("top_logprobs", r.generation.top_logprobs, 0, 20);
  if (!logprobs && r.generation.top_logprobs > 0) {
    f.fail(field_error("top_logprobs", "needs 'logprobs' set to true"));
  }
  r.generation.logprobs = logprobs;
  if (f.error()) return *f.error();
  return r;
}

std::variant<CompletionRequest, RequestError> parse_completion_request(
    std::string_view body, const SamplingOptions& defaults) {
  std::variant<json, RequestError> root = parse_object(body);
  if (auto* e = std::get_if<RequestError>(&root)) return *e;
  Fields f(std::get<json>(root));
  CompletionRequest r;
  r.generation.sampling = defaults;
  parse_common(f, r);
  parse_prompt(f, r);
  // Completions' logprobs is the number of alternatives per token (0 to 5), not a flag.
  if (f.find("logprobs")) {
    int top = 0;
    f.integer("logprobs", top, 0, 5);
    r.generation.logprobs = true;
    r.generation.top_logprobs = top;
  }
  if (f.error()) return *f.error();
  return r;
}

std::variant<TokenizeRequest, RequestError> parse_tokenize_request(std::string_view body) {
  std::variant<json, RequestError> root = parse_object(body);
  if (auto* e = std::get_if<RequestError>(&root)) return *e;
  Fields f(std::get<json>(root));
  TokenizeRequest r;
  if (!f.find("content")) f.fail(field_error("content", "is required"));
  f.string("content", r.content);
  f.boolean("add_special", r.add_special);
  f.boolean("parse_special", r.parse_special);
  f.boolean("with_pieces", r.with_pieces);
  if (f.error()) return *f.error();
  return r;
}

std::variant<DetokenizeRequest, RequestError> parse_detokenize_request(std::string_view body) {
  std::variant<json, RequestError> root = parse_object(body);
  if (auto* e = std::get_if<RequestError>(&root)) return *e;
  Fields f(std::get<json>(root));
  DetokenizeRequest r;
  const json* tokens = f.find("tokens");
  if (!tokens || !tokens->is_array()) return field_error("tokens", "must be an array of token ids");
  std::optional<std::vector<TokenId>> ids = token_list(*tokens);
  if (!ids) return field_error("tokens", "must be an array of token ids");
  r.tokens = std::move(*ids);
  return r;
}

std::variant<EmbeddingsRequest, RequestError> parse_embeddings_request(std::string_view body) {
  std::variant<json, RequestError> root = parse_object(body);
  if (auto* e = std::get_if<RequestError>(&root)) return *e;
  Fields f(std::get<json>(root));
  EmbeddingsRequest r;
  f.string("model", r.model);
  parse_prompt_inputs(f, "input", r.inputs);
  std::string format = "float";
  f.string("encoding_format", format);
  if (format != "float" && format != "base64") {
    f.fail(field_error("encoding_format", "must be \"float\" or \"base64\""));
  }
  r.base64 = format == "base64";
  if (f.find("dimensions")) {
    f.fail(field_error("dimensions", "is not supported: the model's embeddings have one size"));
  }
  if (r.inputs.size() > kMaxEmbeddingInputs) {
    f.fail(field_error("input", "must hold at most " + std::to_string(kMaxEmbeddingInputs) +
                                    " texts or token lists"));
  }
  for (const PromptInput& p : r.inputs) {
    if (!p.is_tokens && p.text.empty()) f.fail(field_error("input", "must not hold empty texts"));
  }
  if (f.error()) return *f.error();
  return r;
}

}  // namespace strata::server
