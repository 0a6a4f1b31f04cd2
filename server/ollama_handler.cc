#include "server/ollama_handler.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>

#include "server/embeddings_handler.h"
#include "server/http_errors.h"
#include "server/json_fields.h"

namespace strata::server {
namespace {

constexpr std::chrono::milliseconds kEventWait{100};
// ollama's version string; tools compare it with the features they need (0.5: structured
// outputs, 0.6: /api/embed with input lists).
constexpr const char* kOllamaVersion = "0.6.0";

// ollama's error body: {"error": "message"}, at the status the OpenAI routes give.
void send_ollama_error(HttpExchange& ex, const Error& error) {
  const HttpError mapped = http_error(error);
  HttpResponse response{
      mapped.status, "application/json", {}, json{{"error", error.message}}.dump()};
  if (mapped.retry_after_s > 0) {
    response.headers.push_back({"Retry-After", std::to_string(mapped.retry_after_s)});
  }
  ex.respond(std::move(response));
}

Error bad_request(const std::string& message) {
  return make_error(ErrorCode::kInvalidArgument, message);
}

// RFC 3339 in UTC with nanoseconds, as ollama writes created_at.
std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()) %
                  std::chrono::seconds(1);
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(ns.count()));
  return buf;
}

json model_details(const ModelSummary& m) {
  char size[32];
  const double params = static_cast<double>(m.n_params);
  std::snprintf(size, sizeof size, params >= 1e9 ? "%.1fB" : "%.0fM",
                params >= 1e9 ? params / 1e9 : params / 1e6);
  return {{"parent_model", ""},       {"format", "gguf"},
          {"family", m.architecture}, {"families", {m.architecture}},
          {"parameter_size", size},   {"quantization_level", m.file_type}};
}

// The options ollama requests carry, onto the engine's sampling fields.
void parse_options(Fields& f, GenerationRequest& g, int& num_predict) {
  f.number("temperature", g.sampling.temperature, 0, 100);
  f.integer("top_k", g.sampling.top_k, 0, 1 << 20);
  f.number("top_p", g.sampling.top_p, 0, 1);
  f.number("min_p", g.sampling.min_p, 0, 1);
  f.number("repeat_penalty", g.sampling.repeat_penalty, 0, 100);
  f.integer("repeat_last_n", g.sampling.repeat_last_n, -1, 1 << 20);
  f.number("presence_penalty", g.sampling.presence_penalty, -2, 2);
  f.number("frequency_penalty", g.sampling.frequency_penalty, -2, 2);
  f.integer("seed", g.sampling.seed, 0, INT64_MAX);
  f.integer("num_predict", num_predict, -2, 1 << 24);
  if (const json* stop = f.find("stop")) {
    if (!stop->is_array())
      return f.fail(field_error("options.stop", "must be an array of strings"));
    for (const json& s : *stop) {
      if (!s.is_string()) return f.fail(field_error("options.stop", "must hold strings"));
      g.stop.push_back(s.get<std::string>());
    }
  }
}

struct OllamaRequest {
  std::string model;
  bool stream = true;
  GenerationRequest generation;
  int num_predict = -1;  // -1 (and -2): until the context is full
};

// The prompt tokens of /api/generate (prompt, system, raw) or /api/chat (messages).
Result<std::vector<TokenId>> build_prompt(const OllamaContext& ctx, const Engine& engine,
                                          const json& body, bool chat) {
  if (chat) {
    const auto messages = body.find("messages");
    if (messages == body.end() || !messages->is_array()) {
      return bad_request("'messages' must be an array of {role, content} objects");
    }
    if (!ctx.chat_template.ok()) return ctx.chat_template.error();
    json list = json::array();
    for (const json& m : *messages) {
      if (!m.is_object() || !m.value("role", json()).is_string() ||
          !m.value("content", json()).is_string()) {
        return bad_request("each of 'messages' must have a string 'role' and 'content'");
      }
      list.push_back({{"role", m["role"]}, {"content", m["content"]}});
    }
    STRATA_ASSIGN_OR_RETURN(ChatPrompt p, chat_prompt(*ctx.chat_template, list.dump()));
    return engine.tokenize(p.text, p.add_bos, /*parse_special=*/true);
  }
  const json prompt = body.value("prompt", json(""));
  if (!prompt.is_string()) return bad_request("'prompt' must be a string");
  const bool raw = body.value("raw", false);
  const std::string system = body.value("system", std::string());
  if (raw || !ctx.chat_template.ok()) {
    return engine.tokenize(system + prompt.get<std::string>(), true, /*parse_special=*/raw);
  }
  // Not raw: the prompt is one user turn of the model's template, as ollama renders it.
  json list = json::array();
  if (!system.empty()) list.push_back({{"role", "system"}, {"content", system}});
  list.push_back({{"role", "user"}, {"content", prompt}});
  STRATA_ASSIGN_OR_RETURN(ChatPrompt p, chat_prompt(*ctx.chat_template, list.dump()));
  return engine.tokenize(p.text, p.add_bos, /*parse_special=*/true);
}

Result<OllamaRequest> parse_generate(const OllamaContext& ctx, const Engine& engine,
                                     std::string_view text, bool chat) {
  std::variant<json, RequestError> root = parse_object(text);
  if (auto* e = std::get_if<RequestError>(&root)) return e->error;
  const json& body = std::get<json>(root);
  OllamaRequest r;
  r.generation.sampling = ctx.sampling;
  Fields f(body);
  f.string("model", r.model);
  f.boolean("stream", r.stream);
  if (const json* options = f.find("options")) {
    if (!options->is_object()) return bad_request("'options' must be an object");
    Fields o(*options);
    parse_options(o, r.generation, r.num_predict);
    if (o.error()) return o.error()->error;
  }
  if (const json* format = f.find("format")) {
    if (format->is_string() && format->get<std::string>() == "json") {
      r.generation.constraint.kind = ConstraintKind::kJsonObject;
    } else if (format->is_object()) {
      r.generation.constraint.kind = ConstraintKind::kJsonSchema;
      r.generation.constraint.text = format->dump();
    } else {
      return bad_request("'format' must be \"json\" or a JSON Schema object");
    }
  }
  if (f.error()) return f.error()->error;
  STRATA_ASSIGN_OR_RETURN(r.generation.prompt, build_prompt(ctx, engine, body, chat));
  const size_t context = engine.model().context;
  if (r.generation.prompt.size() >= context) {
    return make_error(ErrorCode::kOutOfRange,
                      "the prompt has " + std::to_string(r.generation.prompt.size()) +
                          " tokens but the context holds " + std::to_string(context));
  }
  const int room = static_cast<int>(context - r.generation.prompt.size());
  r.generation.max_tokens = r.num_predict < 0 ? room : std::min(std::max(r.num_predict, 1), room);
  if (!body.contains("options") || !body["options"].contains("seed")) {
    std::random_device random;
    r.generation.sampling.seed = (static_cast<uint64_t>(random()) << 32) ^ random();
  }
  if (chat && ctx.chat_template.ok()) {
    for (std::string& s : chat_template_stops(*ctx.chat_template)) r.generation.stop.push_back(s);
  }
  return r;
}

// One NDJSON object of a reply: the text so far (streamed: this event's text) and, at the end,
// ollama's statistics (durations in nanoseconds).
json reply_object(const OllamaContext& ctx, bool chat, const std::string& text) {
  json o = {{"model", ctx.model_id}, {"created_at", now_rfc3339()}};
  if (chat) {
    o["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    o["response"] = text;
  }
  o["done"] = false;
  return o;
}

struct Timing {
  Clock::time_point arrival, first, last;
  size_t prompt_tokens = 0, eval_tokens = 0;
};

void add_final_fields(json& o, FinishReason finish, const Timing& t) {
  auto ns = [](Clock::time_point a, Clock::time_point b) {
    return static_cast<int64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
  };
  o["done"] = true;
  o["done_reason"] = finish == FinishReason::kLength ? "length" : "stop";
  o["total_duration"] = ns(t.arrival, t.last);
  o["load_duration"] = 0;
  o["prompt_eval_count"] = t.prompt_tokens;
  o["prompt_eval_duration"] = ns(t.arrival, t.first);
  o["eval_count"] = t.eval_tokens;
  o["eval_duration"] = ns(t.first, t.last);
}

}  // namespace

void answer_ollama_version(HttpExchange& ex) { respond_json(ex, {{"version", kOllamaVersion}}); }

void answer_ollama_tags(const OllamaContext& ctx, HttpExchange& ex) {
  const Engine* engine = ctx.worker.engine();
  if (!engine)
    return send_ollama_error(ex, make_error(ErrorCode::kUnavailable, "the model is loading"));
  std::error_code ec;
  const auto size = std::filesystem::file_size(ctx.model_path, ec);
  respond_json(ex, {{"models",
                     {{{"name", ctx.model_id},
                       {"model", ctx.model_id},
                       {"modified_at", now_rfc3339()},
                       {"size", ec ? 0 : size},
                       {"digest", ""},
                       {"details", model_details(engine->model())}}}}});
}

void answer_ollama_show(const OllamaContext& ctx, HttpExchange& ex) {
  const Engine* engine = ctx.worker.engine();
  if (!engine)
    return send_ollama_error(ex, make_error(ErrorCode::kUnavailable, "the model is loading"));
  const ModelSummary& m = engine->model();
  const std::string a = m.architecture + ".";
  respond_json(ex, {{"license", ""},
                    {"modelfile", "FROM " + ctx.model_path + "\n"},
                    {"parameters", ""},
                    {"template", ctx.chat_template.ok() ? ctx.chat_template->source : ""},
                    {"details", model_details(m)},
                    {"model_info",
                     {{"general.architecture", m.architecture},
                      {"general.parameter_count", m.n_params},
                      {a + "context_length", m.n_ctx_train},
                      {a + "embedding_length", m.n_embd},
                      {a + "block_count", m.n_layers},
                      {a + "attention.head_count", m.n_heads},
                      {a + "attention.head_count_kv", m.n_kv_heads}}},
                    {"capabilities", {"completion"}}});
}

void handle_ollama_generate(const OllamaContext& ctx, bool chat, HttpExchange& ex) {
  Timing timing;
  timing.arrival = Clock::now();
  const Engine* engine = ctx.worker.engine();
  if (!engine)
    return send_ollama_error(ex, make_error(ErrorCode::kUnavailable, "the model is loading"));
  Result<OllamaRequest> parsed = parse_generate(ctx, *engine, ex.request().body, chat);
  if (!parsed.ok()) return send_ollama_error(ex, parsed.error());
  OllamaRequest& r = *parsed;
  if (Status compiled = engine->prepare_constraint(r.generation.constraint, {}); !compiled.ok()) {
    return send_ollama_error(ex, compiled.error());
  }
  timing.prompt_tokens = r.generation.prompt.size();
  Result<std::shared_ptr<Job>> job = ctx.worker.enqueue({r.generation}, timing.arrival);
  if (!job.ok()) return send_ollama_error(ex, job.error());
  if (Status submitted = (*job)->wait_submitted(); !submitted.ok()) {
    return send_ollama_error(ex, submitted.error());
  }
  if (r.stream && !ex.begin_stream({200, "application/x-ndjson", {}, ""})) return (*job)->cancel();
  std::string text;
  ChoiceEvent e;
  for (;;) {
    if (ex.client_gone()) return (*job)->cancel();
    if (!(*job)->next(e, kEventWait)) continue;
    const TokenEvent& t = e.event;
    if (t.admitted) continue;
    timing.last = Clock::now();
    if (t.token >= 0 && timing.eval_tokens++ == 0) timing.first = timing.last;
    if (t.finish == FinishReason::kError || t.finish == FinishReason::kCancelled) {
      const Error error = t.finish == FinishReason::kError
                              ? make_error(t.error_code, t.error)
                              : make_error(ErrorCode::kUnavailable, "cancelled by the server");
      if (!r.stream) return send_ollama_error(ex, error);
      ex.write(json{{"error", error.message}}.dump() + "\n");
      ex.end_stream();
      return;
    }
    if (timing.eval_tokens == 0) timing.first = timing.last;
    if (r.stream) {
      json o = reply_object(ctx, chat, t.text);
      if (t.finish != FinishReason::kNone) add_final_fields(o, t.finish, timing);
      if ((!t.text.empty() || t.finish != FinishReason::kNone) &&
          !ex.write(o.dump(-1, ' ', false, json::error_handler_t::replace) + "\n")) {
        return (*job)->cancel();
      }
    } else {
      text += t.text;
    }
    if (t.finish == FinishReason::kNone) continue;
    if (r.stream) {
      ex.end_stream();
    } else {
      json o = reply_object(ctx, chat, text);
      add_final_fields(o, t.finish, timing);
      respond_json(ex, o);
    }
    ex.annotate("prompt_tokens", std::to_string(timing.prompt_tokens));
    ex.annotate("completion_tokens", std::to_string(timing.eval_tokens));
    return;
  }
}

void handle_ollama_embed(const OllamaContext& ctx, HttpExchange& ex) {
  // The OpenAI request's decoder reads ollama's body too (input, model; the rest is ignored).
  std::variant<EmbeddingsRequest, RequestError> parsed =
      parse_embeddings_request(ex.request().body);
  if (auto* e = std::get_if<RequestError>(&parsed)) return send_ollama_error(ex, e->error);
  const Clock::time_point arrival = Clock::now();
  Result<Embeddings> embeddings =
      run_embeddings(ctx.worker, std::get<EmbeddingsRequest>(parsed).inputs, ex);
  if (!embeddings.ok()) {
    if (embeddings.error().code != ErrorCode::kCancelled) send_ollama_error(ex, embeddings.error());
    return;
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - arrival);
  respond_json(ex, {{"model", ctx.model_id},
                    {"embeddings", embeddings->vectors},
                    {"total_duration", ns.count()},
                    {"load_duration", 0},
                    {"prompt_eval_count", embeddings->prompt_tokens}});
}

}  // namespace strata::server
