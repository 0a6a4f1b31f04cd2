// The Engine: one step = schedule, execute (one batched forward), mask + sample, update.
#include "strata/engine.h"

#include <algorithm>
#include <cstdio>
#include <list>
#include <thread>

#include "base/timer.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "platform/cpu_features.h"
#include "platform/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace strata {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone:
      return "none";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "?";
}

namespace {

constexpr size_t kDefaultMaxContext = 4096;

sampling::SamplingParams to_sampling_params(const SamplingOptions& o) {
  sampling::SamplingParams p;
  p.temperature = o.temperature;
  p.top_k = o.top_k;
  p.top_p = o.top_p;
  p.min_p = o.min_p;
  p.repeat_penalty = o.repeat_penalty;
  p.repeat_last_n = o.repeat_last_n;
  p.frequency_penalty = o.frequency_penalty;
  p.presence_penalty = o.presence_penalty;
  p.logit_bias = o.logit_bias;
  p.seed = o.seed;
  return p;
}

}  // namespace

struct Engine::Impl {
  EngineOptions options;
  ModelSummary summary;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<kv::KvCache> cache;
  std::unique_ptr<engine::Scheduler> scheduler;
  std::unique_ptr<engine::ConstraintCompiler> constraints;
  std::list<engine::Sequence> sequences;  // stable addresses; the scheduler holds pointers
  uint64_t next_id = 1;
  std::vector<float> logits;  // [n_out][n_vocab] of the current step
  bool in_step = false;       // callbacks may cancel; sequences are then dropped after the step

  size_t n_vocab() const { return model->config().n_vocab; }

  // Forgets sequences that finished this step (the scheduler already released them).
  void drop_finished() {
    std::erase_if(sequences,
                  [](const engine::Sequence& s) { return s.finish != FinishReason::kNone; });
  }

  void finish(engine::Sequence& s, FinishReason reason, const std::string& error = "") {
    s.finish = reason;
    TokenEvent event;
    event.finish = reason;
    event.error = error;
    if (reason != FinishReason::kError) event.text = s.detokenizer->finish() + s.stop->flush();
    if (s.on_token) s.on_token(event);
    scheduler->remove(&s);
  }

  // Appends a sampled token and reports it; finishes the sequence when a stop condition holds.
  void update(engine::Sequence& s, const sampling::SampledToken& sampled) {
    const TokenId token = sampled.id;
    if (s.constraint) {
      Status accepted = s.constraint->accept(token);
      if (!accepted.ok()) return finish(s, FinishReason::kError, accepted.error().message);
    }
    s.tokens.push_back(token);
    TokenEvent event;
    event.token = token;
    if (s.sampler->params().logprobs) {
      event.logprob = sampled.logprob;
      event.top_logprobs.reserve(sampled.top_logprobs.size());
      for (const sampling::TokenLogprob& t : sampled.top_logprobs)
        event.top_logprobs.push_back({t.id, t.logprob});
    }
    bool stop_string = false;
    if (!s.ignore_eos && tokenizer->is_eog(token)) {
      event.finish = FinishReason::kStop;  // end-of-generation tokens are not shown
    } else {
      engine::StopMatcher::Output out = s.stop->push(s.detokenizer->push(token));
      event.text = std::move(out.text);
      stop_string = out.stopped;
      if (stop_string) event.finish = FinishReason::kStop;
    }
    // A grammar that is complete and allows nothing more ends the output, as an EOG would.
    if (event.finish == FinishReason::kNone && s.constraint && s.constraint->terminated()) {
      event.finish = FinishReason::kStop;
    }
    // At the token limit a constrained output the budget guard brought to a whole sentence was
    // not cut short: it stops rather than reporting length.
    if (event.finish == FinishReason::kNone && s.tokens.size() >= s.max_length) {
      const bool complete = s.constraint && s.constraint->complete();
      event.finish = complete ? FinishReason::kStop : FinishReason::kLength;
    }
    // At the end, release text held back for a possible stop string, unless one was found.
    if (event.finish != FinishReason::kNone && !stop_string) {
      event.text += s.detokenizer->finish() + s.stop->flush();
    }
    const bool keep_going = !s.on_token || s.on_token(event);
    if (event.finish == FinishReason::kNone && !keep_going) event.finish = FinishReason::kCancelled;
    if (event.finish != FinishReason::kNone) {
      s.finish = event.finish;
      scheduler->remove(&s);
    }
  }

  Status step() {
    in_step = true;
    Status status = run_step();
    in_step = false;
    drop_finished();
    return status;
  }

  Status run_step() {
    // 1. schedule
    std::vector<engine::Sequence*> starved;
    std::vector<engine::ScheduledChunk> chunks = scheduler->schedule(starved);
    for (engine::Sequence* s : starved) {
      finish(*s, FinishReason::kError,
             "the KV cache is full; raise the context size or run fewer sequences at once");
    }
    // 2. execute: one batch of every chunk's tokens; logits where a chunk completes its pending
    // tokens
    model::Batch batch;
    std::vector<engine::Sequence*> sampled;
    for (const engine::ScheduledChunk& c : chunks) {
      engine::Sequence& s = *c.seq;
      for (size_t i = 0; i < c.n_tokens; ++i) {
        const size_t pos = s.n_computed + i;
        const bool last = pos + 1 == s.tokens.size();
        batch.push_back({s.id, static_cast<uint32_t>(pos), s.tokens[pos], last});
        if (last) sampled.push_back(&s);
      }
      s.n_computed += c.n_tokens;
    }
    if (batch.empty()) return ok_status();
    logits.resize(sampled.size() * n_vocab());
    Status forward = model->forward(batch, *cache, *pool, logits.data());
    if (!forward.ok()) {
      // The step's sequences cannot continue; end them so no caller waits on them forever.
      for (const engine::ScheduledChunk& c : chunks)
        finish(*c.seq, FinishReason::kError, forward.error().message);
      return forward.error();
    }
    // 3-4. mask and sample (the sampler runs the sequence's logit processors), 5. update
    for (size_t i = 0; i < sampled.size(); ++i) {
      engine::Sequence& s = *sampled[i];
      if (s.finish != FinishReason::kNone) continue;  // cancelled by a callback this step
      std::span<const float> row(logits.data() + i * n_vocab(), n_vocab());
      sampling::SequenceHistory history{
          std::span<const TokenId>(s.tokens.data(), s.n_prompt),
          std::span<const TokenId>(s.tokens.data() + s.n_prompt, s.n_generated())};
      Result<sampling::SampledToken> token = s.sampler->sample(row, history);
      if (token.ok()) {
        update(s, *token);
      } else {
        finish(s, FinishReason::kError, token.error().message);
      }
    }
    return ok_status();
  }
};

namespace {

// The KV cache is allocated whole when the engine starts; one that cannot fit beside the weights
// in this machine's memory is refused with the figures, instead of failing to allocate (or
// being killed when its pages are first touched).
Status check_kv_fits(double kv_bytes, size_t weight_bytes, size_t context, size_t sequences) {
  const double memory = static_cast<double>(physical_memory_bytes());
  if (memory == 0 || kv_bytes + static_cast<double>(weight_bytes) <= memory) return ok_status();
  auto gib = [](double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1 << 30));
    return std::string(text);
  };
  return make_error(ErrorCode::kOutOfRange,
                    "a context of " + std::to_string(context) + " tokens for " +
                        std::to_string(sequences) + " sequence(s) needs " + gib(kv_bytes) +
                        " of KV cache beside " + gib(static_cast<double>(weight_bytes)) +
                        " of weights, more than this machine's " + gib(memory) +
                        " of memory: lower the context size (-c) or the parallel sequences");
}

}  // namespace

Status check_thread_count(int threads) {
  if (threads >= 0 && threads <= kMaxThreads) return ok_status();
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  return make_error(ErrorCode::kInvalidArgument,
                    "thread count " + std::to_string(threads) +
                        " is out of range: use 0 (one per hardware thread, " +
                        std::to_string(hardware) + " here) to " + std::to_string(kMaxThreads) +
                        " (strata's limit, as llama.cpp's)");
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& options) {
  STRATA_RETURN_IF_ERROR(check_thread_count(options.threads));
  if (options.context < 0 || options.max_sequences <= 0 || options.batch_tokens <= 0 ||
      options.page_size <= 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "context, max_sequences, batch_tokens and page_size must be positive");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->pool = std::make_unique<ThreadPool>(static_cast<size_t>(options.threads));
  const auto mode = options.use_mmap ? MappedFile::Mode::kMmap : MappedFile::Mode::kResident;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<gguf::File> file,
                          gguf::File::open(options.model_path, mode));
  STRATA_ASSIGN_OR_RETURN(impl->tokenizer, tokenizer::Tokenizer::from_gguf(*file));
  STRATA_ASSIGN_OR_RETURN(
      impl->model,
      model::Model::load(
          std::move(file),
          {.interleave_pool = options.interleave_weights ? impl->pool.get() : nullptr}));
  const model::ModelConfig& c = impl->model->config();
  if (impl->tokenizer->n_vocab() != c.n_vocab) {
    return make_error(ErrorCode::kInvalidFile, "the tokenizer has " +
                                                   std::to_string(impl->tokenizer->n_vocab()) +
                                                   " tokens but the model's embedding has " +
                                                   std::to_string(c.n_vocab) + " rows");
  }
  size_t context = options.context > 0 ? static_cast<size_t>(options.context)
                                       : std::min(c.n_ctx_train, kDefaultMaxContext);
  const size_t page = static_cast<size_t>(options.page_size);
  const size_t n_pages = (context + page - 1) / page * static_cast<size_t>(options.max_sequences);
  const kv::KvShape kv_shape = impl->model->kv_shape(page);
  const kv::KvPrecision precision = options.kv_f16 ? kv::KvPrecision::kF16 : kv::KvPrecision::kF32;
  // In double: a huge context times many sequences could overflow size_t.
  const double kv_bytes =
      static_cast<double>(kv_shape.page_elements() * precision_bytes(precision)) *
      static_cast<double>(n_pages);
  STRATA_RETURN_IF_ERROR(check_kv_fits(kv_bytes, impl->model->weights().bytes, context,
                                       static_cast<size_t>(options.max_sequences)));
  impl->cache = std::make_unique<kv::KvCache>(kv_shape, n_pages, precision);
  impl->constraints = std::make_unique<engine::ConstraintCompiler>(*impl->tokenizer);
  impl->scheduler =
      std::make_unique<engine::Scheduler>(*impl->cache, static_cast<size_t>(options.max_sequences),
                                          static_cast<size_t>(options.batch_tokens));

  ModelSummary& m = impl->summary;
  m.architecture = c.arch_name;
  m.name = impl->model->file().get_string("general.name").value_or("");
  m.n_vocab = c.n_vocab;
  m.n_ctx_train = c.n_ctx_train;
  m.n_embd = c.n_embd;
  m.n_layers = c.n_layers;
  m.n_heads = c.n_heads;
  m.n_kv_heads = c.n_kv_heads;
  m.context = context;
  m.weight_bytes = impl->model->weights().bytes;
  m.simd_targets = simd_targets_description();
  m.interleaved_matrices = impl->model->interleaved_matrices();
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const ModelSummary& Engine::model() const { return impl_->summary; }

Status limit_simd_targets(const std::string& target) {
  if (!disable_simd_targets_above(target)) {
    return make_error(
        ErrorCode::kInvalidArgument,
        "no SIMD target '" + target + "' on this CPU; it offers " + simd_targets_description());
  }
  return ok_status();
}

std::vector<TokenId> Engine::tokenize(std::string_view text, bool add_special,
                                      bool parse_special) const {
  return impl_->tokenizer->encode(text, add_special, parse_special);
}

std::string Engine::detokenize(std::span<const TokenId> ids) const {
  return impl_->tokenizer->decode(ids);
}

std::string Engine::token_piece(TokenId id) const { return impl_->tokenizer->token_to_piece(id); }

Result<uint64_t> Engine::submit(const GenerationRequest& request, TokenCallback on_token) {
  Impl& im = *impl_;
  const size_t context = im.summary.context;
  if (request.prompt.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the prompt is empty; it needs at least one token (e.g. BOS)");
  }
  if (request.prompt.size() >= context) {
    return make_error(ErrorCode::kOutOfRange,
                      "the prompt has " + std::to_string(request.prompt.size()) +
                          " tokens but the context holds " + std::to_string(context) +
                          " (prompt plus at least one generated token); shorten it or raise -c");
  }
  for (TokenId t : request.prompt) {
    if (t < 0 || static_cast<size_t>(t) >= im.n_vocab()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "prompt token id " + std::to_string(t) + " is outside the vocabulary");
    }
  }
  if (request.max_tokens <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "max_tokens must be at least 1");
  }
  if (im.options.max_waiting > 0 &&
      im.scheduler->n_waiting() >= static_cast<size_t>(im.options.max_waiting)) {
    return make_error(ErrorCode::kUnavailable, "the queue of waiting requests is full (" +
                                                   std::to_string(im.options.max_waiting) +
                                                   "); retry later");
  }
  sampling::SamplingParams params = to_sampling_params(request.sampling);
  params.logprobs = request.logprobs || request.top_logprobs > 0;
  params.top_logprobs = request.top_logprobs;
  STRATA_RETURN_IF_ERROR(params.validate(im.n_vocab()));
  STRATA_ASSIGN_OR_RETURN(sampling::Sampler sampler, sampling::Sampler::create(params));
  // Prompt plus generated tokens, capped by the context.
  const size_t max_length =
      std::min(context, request.prompt.size() + static_cast<size_t>(request.max_tokens));
  engine::SequenceConstraint* constraint = nullptr;
  if (request.constraint.kind != ConstraintKind::kNone) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::CompiledGrammar> grammar,
                            im.constraints->compile(request.constraint));
    auto owned = std::make_unique<engine::SequenceConstraint>(grammar, request.constraint.triggers,
                                                              max_length - request.prompt.size());
    constraint = owned.get();
    sampler.add_processor(std::move(owned));  // last, after penalties and biases
  }

  engine::Sequence& s = im.sequences.emplace_back();
  s.id = im.next_id++;
  s.tokens = request.prompt;
  s.n_prompt = request.prompt.size();
  s.max_length = max_length;
  s.ignore_eos = request.ignore_eos;
  s.sampler = std::make_unique<sampling::Sampler>(std::move(sampler));
  s.detokenizer = std::make_unique<tokenizer::StreamingDetokenizer>(*im.tokenizer);
  s.stop = std::make_unique<engine::StopMatcher>(request.stop);
  s.constraint = constraint;
  s.on_token = std::move(on_token);
  im.scheduler->add(&s);
  return s.id;
}

Status Engine::prepare_constraint(const OutputConstraint& constraint,
                                  const CompileBudget& budget) const {
  if (constraint.kind == ConstraintKind::kNone) return ok_status();
  auto compiled = impl_->constraints->compile(constraint, budget);
  if (!compiled.ok()) return compiled.error();
  return ok_status();
}

Status Engine::step() { return impl_->step(); }

bool Engine::has_work() const { return !impl_->sequences.empty(); }

bool Engine::cancel(uint64_t id) {
  Impl& im = *impl_;
  auto it = std::find_if(im.sequences.begin(), im.sequences.end(),
                         [id](const engine::Sequence& s) { return s.id == id; });
  if (it == im.sequences.end() || it->finish != FinishReason::kNone) return false;
  im.finish(*it, FinishReason::kCancelled);
  if (!im.in_step) im.drop_finished();
  return true;
}

EngineLoad Engine::load() const {
  const Impl& im = *impl_;
  EngineLoad load;
  load.running = im.scheduler->n_running();
  load.waiting = im.scheduler->n_waiting();
  load.kv_pages_total = im.cache->pool().n_pages();
  load.kv_pages_used = im.cache->pool().used_pages();
  load.page_size = static_cast<size_t>(im.options.page_size);
  return load;
}

Result<GenerationStats> Engine::generate(const GenerationRequest& request,
                                         const TokenCallback& on_token) {
  GenerationStats stats;
  stats.prompt_tokens = request.prompt.size();
  const double start = now_seconds();
  double first = 0;
  bool done = false;
  auto callback = [&](const TokenEvent& e) {
    if (e.token >= 0 && stats.generated_tokens++ == 0) first = now_seconds();
    const bool keep_going = on_token ? on_token(e) : true;
    if (e.finish != FinishReason::kNone) {
      stats.finish = e.finish;
      stats.error = e.error;
    } else if (!keep_going) {
      stats.finish = FinishReason::kCancelled;  // the engine drops the request after this event
    }
    done = stats.finish != FinishReason::kNone;
    return keep_going;
  };
  STRATA_RETURN_IF_ERROR(submit(request, callback));
  while (!done) {
    Status st = step();
    if (!st.ok()) return st.error();
  }
  const double end = now_seconds();
  stats.prompt_seconds = (first > 0 ? first : end) - start;
  stats.generate_seconds = first > 0 ? end - first : 0;
  return stats;
}

Result<std::vector<float>> Engine::evaluate(std::span<const TokenId> tokens, bool all_positions) {
  Impl& im = *impl_;
  if (tokens.empty())
    return make_error(ErrorCode::kInvalidArgument, "nothing to evaluate: no tokens");
  if (tokens.size() > im.summary.context) {
    return make_error(ErrorCode::kOutOfRange, std::to_string(tokens.size()) +
                                                  " tokens do not fit the context of " +
                                                  std::to_string(im.summary.context));
  }
  const kv::SeqId seq = im.next_id++;
  STRATA_RETURN_IF_ERROR(im.cache->reserve(seq, tokens.size()));
  const size_t V = im.n_vocab();
  const size_t chunk = static_cast<size_t>(im.options.batch_tokens);
  std::vector<float> out(all_positions ? tokens.size() * V : V);
  Status status = ok_status();
  for (size_t start = 0; start < tokens.size() && status.ok(); start += chunk) {
    const size_t end = std::min(tokens.size(), start + chunk);
    model::Batch batch;
    for (size_t p = start; p < end; ++p) {
      batch.push_back(
          {seq, static_cast<uint32_t>(p), tokens[p], all_positions || p + 1 == tokens.size()});
    }
    float* dst = all_positions ? out.data() + start * V : out.data();
    status = im.model->forward(batch, *im.cache, *im.pool, dst);
  }
  im.cache->remove(seq);
  if (!status.ok()) return status.error();
  return out;
}

}  // namespace strata
