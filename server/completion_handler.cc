#include "server/completion_handler.h"

#include <optional>
#include <random>

#include "server/http_errors.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "strata/chat.h"
#include "strata/compile_budget.h"

namespace strata::server {
namespace {

// How long a stream waits for the next event before it checks that the client is still there.
constexpr std::chrono::milliseconds kEventWait{100};

std::string random_hex(size_t n) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) out += kHex[rng() % 16];
  return out;
}

// Per-choice progress while events arrive.
struct ChoiceState {
  ChoiceResult result;
  std::optional<ToolCallStream> tool_stream;  // streamed requests with tools
  std::vector<std::string> tool_call_ids;     // of the calls streamed so far
  size_t completion_tokens = 0;
  std::vector<LogprobEntry> pending_logprobs;  // tokens whose text the engine still holds back
  bool finished = false;
};

// The whole response being assembled from a job's events, streamed or not.
struct Collector {
  explicit Collector(const Engine& e) : engine(e) {}
  const Engine& engine;
  bool logprobs = false;
  // With tools, replies are parsed into calls when they finish; streams then hold the text
  // back, since what looks like text may turn out to be a call.
  bool tools = false;
  ToolCallFormat tool_format = ToolCallFormat::kGeneric;
  std::vector<ChoiceState> choices;
  size_t prompt_tokens = 0;
  size_t cached_tokens = 0;                      // of prompt_tokens, found in the prefix cache
  Clock::time_point arrival = Clock::now();      // of the request
  std::optional<Clock::time_point> first_token;  // of any choice
  Clock::time_point last_token;                  // of any choice, with first_token
  size_t n_finished = 0;
  std::optional<Error> error;  // a choice failed; the response is an error

  // Folds one event into its choice; returns the text and logprobs it adds.
  void add(const ChoiceEvent& e, std::string& text, std::vector<LogprobEntry>& entries) {
    ChoiceState& c = choices[e.choice];
    const TokenEvent& t = e.event;
    if (t.admitted) {
      cached_tokens += t.cached_tokens;
      return;
    }
    if (t.token >= 0) {
      last_token = Clock::now();
      if (!first_token) first_token = last_token;
      ++c.completion_tokens;
      const bool end_of_generation = t.finish == FinishReason::kStop && t.text.empty();
      if (logprobs && !end_of_generation) {
        LogprobEntry entry{engine.token_piece(t.token), t.logprob, {}, c.result.text.size()};
        for (const TokenLogprob& alt : t.top_logprobs)
          entry.top.emplace_back(engine.token_piece(alt.token), alt.logprob);
        c.pending_logprobs.push_back(std::move(entry));
      }
    }
    text = t.text;
    c.result.text += t.text;
    if (!text.empty() || t.finish != FinishReason::kNone) {
      entries = std::move(c.pending_logprobs);
      c.pending_logprobs.clear();
      c.result.logprobs.insert(c.result.logprobs.end(), entries.begin(), entries.end());
    }
    if (t.finish == FinishReason::kNone) return;
    c.finished = true;
    c.result.finish = t.finish;
    ++n_finished;
    if (tools && (t.finish == FinishReason::kStop || t.finish == FinishReason::kLength)) {
      ParsedReply reply = parse_tool_calls(tool_format, c.result.text);
      if (!reply.tool_calls.empty()) {
        for (ToolCall& call : reply.tool_calls) call.id = "call_" + random_hex(24);
        c.result.tool_calls = std::move(reply.tool_calls);
        c.result.text = std::move(reply.content);
      } else if (t.finish == FinishReason::kLength) {
        // A call cut short by max_tokens is protocol, not an answer: the content is only the
        // text that can no longer be the start of a call, as a stream would have sent it.
        c.result.text = ToolCallStream(tool_format).push(c.result.text).content;
      }
    }
    if (t.finish == FinishReason::kError && !error) {
      error = make_error(t.error_code, t.error);
    } else if (t.finish == FinishReason::kCancelled && !error) {
      error = make_error(ErrorCode::kUnavailable, "the request was cancelled by the server");
    }
  }
  bool done() const { return n_finished == choices.size(); }
  Usage usage() const {
    Usage u{prompt_tokens, 0, cached_tokens, std::nullopt};
    for (const ChoiceState& c : choices) u.completion_tokens += c.completion_tokens;
    if (first_token) {
      auto ms = [](Clock::time_point a, Clock::time_point b) {
        return std::chrono::duration<double, std::milli>(b - a).count();
      };
      u.timings = Timings{ms(arrival, *first_token), ms(*first_token, last_token)};
    }
    return u;
  }
};

// Builds one GenerationRequest per choice: each prompt times n.
std::variant<std::vector<GenerationRequest>, RequestError> build_choices(
    const CompletionContext& ctx, const Engine& engine, const CompletionRequest& r,
    const CompileBudget& budget, size_t& prompt_tokens) {
  std::vector<std::vector<TokenId>> prompts;
  std::string param = r.chat ? "messages" : "prompt";
  if (r.chat) {
    if (!ctx.chat_template.ok()) return RequestError{ctx.chat_template.error(), ""};
    Result<ChatPrompt> prompt =
        chat_prompt(*ctx.chat_template, r.messages_json, r.uses_tools() ? r.tools_json : "");
    if (!prompt.ok()) return RequestError{prompt.error(), param};
    prompts.push_back(engine.tokenize(prompt->text, prompt->add_bos, /*parse_special=*/true));
  } else {
    for (const PromptInput& p : r.prompts) {
      prompts.push_back(p.is_tokens ? p.tokens
                                    : engine.tokenize(p.text, /*add_special=*/true,
                                                      /*parse_special=*/true));
    }
  }
  GenerationRequest base = r.generation;
  if (r.uses_tools() && ctx.chat_template.ok()) {
    Result<OutputConstraint> constraint =
        tool_call_constraint(detect_tool_call_format(ctx.chat_template->source), r.tools_json,
                             r.tool_choice, r.parallel_tool_calls, budget);
    if (!constraint.ok()) return RequestError{constraint.error(), "tools"};
    base.constraint = std::move(constraint).value();
  }
  const size_t context = engine.model().context;
  const size_t n_vocab = engine.model().n_vocab;
  for (const auto& [id, bias] : base.sampling.logit_bias) {
    if (static_cast<size_t>(id) >= n_vocab) {
      return RequestError{
          make_error(ErrorCode::kInvalidArgument, "'logit_bias' names token " + std::to_string(id) +
                                                      ", outside the vocabulary of " +
                                                      std::to_string(n_vocab) + " tokens"),
          "logit_bias"};
    }
  }
  std::vector<GenerationRequest> choices;
  std::random_device random;
  for (const std::vector<TokenId>& prompt : prompts) {
    for (TokenId t : prompt) {
      if (static_cast<size_t>(t) >= n_vocab) {
        return RequestError{
            make_error(ErrorCode::kInvalidArgument, "'prompt' token id " + std::to_string(t) +
                                                        " is outside the vocabulary of " +
                                                        std::to_string(n_vocab) + " tokens"),
            param};
      }
    }
    if (prompt.size() >= context) {
      return RequestError{
          make_error(ErrorCode::kOutOfRange,
                     "the prompt has " + std::to_string(prompt.size()) +
                         " tokens but the context holds " + std::to_string(context) +
                         " (prompt plus at least one generated token); shorten it"),
          param};
    }
    prompt_tokens += prompt.size();
    for (int i = 0; i < r.n; ++i) {
      GenerationRequest g = base;
      g.prompt = prompt;
      g.max_tokens = r.max_tokens.value_or(static_cast<int>(context - prompt.size()));
      g.sampling.seed = r.seeded ? r.generation.sampling.seed + static_cast<uint64_t>(i)
                                 : (static_cast<uint64_t>(random()) << 32) ^ random();
      if (r.chat && ctx.chat_template.ok()) {
        for (std::string& s : chat_template_stops(*ctx.chat_template)) g.stop.push_back(s);
      }
      choices.push_back(std::move(g));
    }
  }
  return choices;
}

// Waits for every choice to finish, then answers with the whole response. Nothing is written
// until then, so a client that leaves is noticed by polling the exchange, not by a failed write.
void respond_whole(Job& job, Collector& collector, const ResponseHeader& header,
                   HttpExchange& exchange) {
  ChoiceEvent e;
  std::string text;
  std::vector<LogprobEntry> entries;
  while (!collector.done() && !collector.error) {
    if (exchange.client_gone()) return job.cancel();
    if (job.next(e, kEventWait)) collector.add(e, text, entries);
  }
  if (collector.error) {
    job.cancel();
    return send_error(exchange, *collector.error);
  }
  std::vector<ChoiceResult> results;
  for (ChoiceState& c : collector.choices) {
    c.result.has_logprobs = collector.logprobs;
    results.push_back(std::move(c.result));
  }
  exchange.respond(
      {200, "application/json", {}, completion_body(header, results, collector.usage())});
}

// SSE chunks for one choice's tool-stream delta: content, then call pieces (new calls get ids).
std::string tool_stream_chunks(const ResponseHeader& header, size_t choice,
                               const ToolCallStream::Delta& delta, std::vector<std::string>& ids) {
  std::string out;
  if (!delta.content.empty()) out += sse_event(text_chunk(header, choice, delta.content, nullptr));
  if (delta.calls.empty()) return out;
  for (const ToolCallStream::CallDelta& c : delta.calls) {
    if (c.first) ids.push_back("call_" + random_hex(24));
  }
  return out + sse_event(tool_call_deltas_chunk(header, choice, delta.calls, ids));
}

// The SSE chunks one event adds to a stream (its text, tool-call pieces, finish reason).
std::string stream_chunks(Collector& collector, const ResponseHeader& header, const ChoiceEvent& e,
                          const std::string& text, std::vector<LogprobEntry>& entries) {
  std::string out;
  if (collector.tools) {
    ChoiceState& c = collector.choices[e.choice];
    if (!c.tool_stream) c.tool_stream.emplace(collector.tool_format);
    ToolCallStream::Delta delta = c.tool_stream->push(text);
    // Text held back as the possible start of a call goes out at the end, unless max_tokens cut
    // the reply: then it is the start of a call that never finished.
    if (e.event.finish != FinishReason::kNone && e.event.finish != FinishReason::kLength) {
      ToolCallStream::Delta rest = c.tool_stream->finish();
      delta.content += rest.content;
      delta.calls.insert(delta.calls.end(), rest.calls.begin(), rest.calls.end());
    }
    out += tool_stream_chunks(header, e.choice, delta, c.tool_call_ids);
    if (e.event.finish != FinishReason::kNone) {
      out += sse_event(finish_chunk(header, e.choice, e.event.finish, !c.tool_call_ids.empty()));
    }
    return out;
  }
  if (!text.empty() || !entries.empty()) {
    out += sse_event(text_chunk(header, e.choice, text, collector.logprobs ? &entries : nullptr));
  }
  if (e.event.finish != FinishReason::kNone) {
    out += sse_event(finish_chunk(header, e.choice, e.event.finish));
  }
  return out;
}

// Streams the job's events as SSE chunks, each batch of events that arrived together as one
// write. A failed write or a client gone between events cancels the job.
void respond_stream(Job& job, Collector& collector, const ResponseHeader& header,
                    HttpExchange& exchange) {
  HttpResponse head{
      200, "text/event-stream", {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}}, ""};
  std::string out;
  if (header.chat) {
    for (size_t i = 0; i < collector.choices.size(); ++i) out += sse_event(role_chunk(header, i));
  }
  // The role chunks go out at once: the client sees its stream open before the first token.
  if (!exchange.begin_stream(head) || !exchange.write(out)) return job.cancel();
  out.clear();
  ChoiceEvent e;
  while (!collector.done()) {
    if (!job.next(e, kEventWait)) {
      if (exchange.client_gone()) return job.cancel();
      continue;
    }
    do {
      std::string text;
      std::vector<LogprobEntry> entries;
      collector.add(e, text, entries);
      if (collector.error) {
        job.cancel();
        out += sse_event(error_json(*collector.error));
        out += kSseDone;
        exchange.write(out);
        exchange.end_stream();
        return;
      }
      if (!e.event.admitted) out += stream_chunks(collector, header, e, text, entries);
    } while (job.next(e, std::chrono::milliseconds(0)));
    if (collector.done()) {
      if (header.include_usage) out += sse_event(usage_chunk(header, collector.usage()));
      out += kSseDone;
    }
    if (!out.empty() && !exchange.write(out)) return job.cancel();
    out.clear();
  }
  exchange.end_stream();
}

}  // namespace

void handle_completion(const CompletionContext& ctx, bool chat, HttpExchange& exchange) {
  const Clock::time_point arrival = Clock::now();
  // Schema and tool grammars compile on this request's thread: its --timeout bounds them, and
  // they stop when the client leaves.
  CompileBudget budget;
  if (ctx.worker.timeout_s() > 0) {
    budget.deadline = arrival + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(ctx.worker.timeout_s()));
  }
  budget.cancelled = exchange.gone_flag();
  const std::string& body = exchange.request().body;
  const bool large = body.size() >= LargeBodyGate::kLargeBodyBytes;
  if (large && !ctx.large_bodies.enter(std::chrono::seconds(10))) {
    return send_error(exchange,
                      make_error(ErrorCode::kUnavailable,
                                 "too many large requests are being read; retry shortly"));
  }
  LargeBodyGate::Slot slot(large ? &ctx.large_bodies : nullptr);
  std::variant<CompletionRequest, RequestError> parsed =
      chat ? parse_chat_request(body, ctx.sampling) : parse_completion_request(body, ctx.sampling);
  if (auto* e = std::get_if<RequestError>(&parsed)) return send_error(exchange, e->error, e->param);
  const CompletionRequest& request = std::get<CompletionRequest>(parsed);
  const Engine* engine = ctx.worker.engine();
  if (!engine) {
    return send_error(exchange, make_error(ErrorCode::kUnavailable, "the model is still loading"));
  }
  Collector collector(*engine);
  collector.arrival = arrival;
  std::variant<std::vector<GenerationRequest>, RequestError> choices =
      build_choices(ctx, *engine, request, budget, collector.prompt_tokens);
  if (auto* e = std::get_if<RequestError>(&choices))
    return send_error(exchange, e->error, e->param);
  slot.release();  // the prompts are tokens now; what remains of the body's cost is small
  collector.logprobs = request.generation.logprobs;
  collector.tools = request.uses_tools() && ctx.chat_template.ok();
  if (collector.tools) {
    collector.tool_format = detect_tool_call_format(ctx.chat_template->source);
  }
  collector.choices.resize(std::get<0>(choices).size());
  if (Status compiled = engine->prepare_constraint(std::get<0>(choices).front().constraint, budget);
      !compiled.ok()) {
    return send_error(exchange, compiled.error());
  }

  Result<std::shared_ptr<Job>> job = ctx.worker.enqueue(std::move(std::get<0>(choices)), arrival);
  if (!job.ok()) {
    // Refused for its size rather than for the server's load: the choices are the request's n.
    const bool too_large = job.error().code == ErrorCode::kInvalidArgument;
    return send_error(exchange, job.error(), too_large ? "n" : "");
  }
  Status submitted = (*job)->wait_submitted();
  if (!submitted.ok()) return send_error(exchange, submitted.error());

  ResponseHeader header = make_response_header(chat, ctx.model_id, request.include_usage);
  if (request.stream) {
    respond_stream(**job, collector, header, exchange);
  } else {
    respond_whole(**job, collector, header, exchange);
  }
  const Usage usage = collector.usage();
  exchange.annotate("prompt_tokens", std::to_string(usage.prompt_tokens));
  exchange.annotate("cached_tokens", std::to_string(usage.cached_tokens));
  exchange.annotate("completion_tokens", std::to_string(usage.completion_tokens));
  if (usage.timings) {
    char ttft[32];
    std::snprintf(ttft, sizeof ttft, "%.1f", usage.timings->prompt_ms);
    exchange.annotate("ttft_ms", ttft);
  }
}

}  // namespace strata::server
