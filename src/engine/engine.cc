// The Engine's public API; the step itself is in engine_step.cc.
#include "strata/engine.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "base/timer.h"
#include "engine/engine_impl.h"
#include "engine/kv_calibration.h"
#include "engine/kv_policy.h"
#include "engine/prefix_root.h"
#include "gguf/describe.h"
#include "gguf/gguf.h"
#include "kernels/kv_format.h"
#include "platform/cpu_features.h"

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

namespace {

// A size for a message: GiB from one up, MiB below.
std::string memory_size(double bytes) {
  char text[32];
  if (bytes >= 0x1p30) {
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / 0x1p30);
  } else {
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / 0x1p20);
  }
  return text;
}

// Bytes of a plan's arenas in memory (pages offloaded to a file, --kv-offload, not counted), in
// double: a huge context times many sequences could overflow size_t.
double plan_bytes(const engine::KvPlan& plan, const kv::KvShape& shape) {
  double bytes = 0;
  for (const kv::ArenaSpec& a : plan.arenas) {
    if (a.offload_dir.empty()) {
      bytes += static_cast<double>(kv::global_part_bytes(shape, a.precision)) *
               static_cast<double>(a.n_pages);
    }
    // Window parts stay in memory (kv/kv_pool.h).
    bytes += static_cast<double>(kv::window_part_bytes(shape, a.precision)) *
             static_cast<double>(kv::window_slot_count(shape, a));
  }
  return bytes;
}

// "a context of N tokens for S sequence(s) needs X of KV cache": how a refused cache begins.
std::string kv_cache_need(const engine::KvPlanInput& in, double kv_bytes) {
  return "a context of " + std::to_string(in.context) + " tokens for " +
         std::to_string(in.sequences) + " sequence(s) needs " + memory_size(kv_bytes) +
         " of KV cache" + (in.policy.offload_dir.empty() ? "" : " in memory beside the offloaded");
}

// The KV cache is allocated whole when the engine starts; one that cannot fit beside the weights
// in this machine's memory is refused with the figures, instead of failing to allocate (or
// being killed when its pages are first touched).
Status check_kv_fits(const engine::KvPlanInput& in, double kv_bytes, size_t weight_bytes) {
  const double memory = static_cast<double>(physical_memory_bytes());
  if (memory == 0 || kv_bytes + static_cast<double>(weight_bytes) <= memory) return ok_status();
  return make_error(ErrorCode::kOutOfRange,
                    kv_cache_need(in, kv_bytes) + " beside " +
                        memory_size(static_cast<double>(weight_bytes)) +
                        " of weights, more than this machine's " + memory_size(memory) +
                        " of memory: lower the context size (-c) or the parallel sequences");
}

// --kv-memory: a cache over the budget is refused, naming what the default tiers would take.
Status check_kv_budget(const engine::KvPlanInput& in, double kv_bytes) {
  const double budget = static_cast<double>(in.policy.memory_bytes);
  if (budget == 0 || kv_bytes <= budget) return ok_status();
  std::string instead = "lower the context size (-c) or the parallel sequences";
  engine::KvPlanInput tiered = in;
  tiered.policy.tiers = default_kv_tiers();
  tiered.policy.pages = 0;
  if (Result<engine::KvPlan> plan = engine::plan_kv_cache(tiered); plan.ok()) {
    const double bytes = plan_bytes(*plan, in.shape);
    if (bytes < kv_bytes) {
      instead = "--kv-tiers default would take " + memory_size(bytes) +
                (bytes <= budget ? "" : " (also over it)") + "; or " + instead;
    }
  }
  return make_error(ErrorCode::kOutOfRange, kv_cache_need(in, kv_bytes) +
                                                ", more than --kv-memory " + memory_size(budget) +
                                                ": " + instead);
}

kv::AttentionMode kv_attention_mode(AttentionMode mode) {
  return mode == AttentionMode::kFast ? kv::AttentionMode::kFast : kv::AttentionMode::kExact;
}

// Key bounds read head rows 8 channels at a time (kernels/key_bounds.h); only toy models have
// other head sizes, and they read densely.
kv::SparsePolicy kv_sparse_policy(const SparseAttentionPolicy& p, const kv::KvShape& shape) {
  kv::SparsePolicy out;
  out.enabled = p.enabled;
  if (p.enabled && shape.head_dim % kernels::kBlockDimMultiple != 0) {
    std::fprintf(stderr,
                 "warning: sparse attention needs a head size that is a multiple of %zu (this "
                 "model's is %zu); attention stays dense\n",
                 kernels::kBlockDimMultiple, shape.head_dim);
    out.enabled = false;
  }
  out.budget = static_cast<size_t>(p.budget);
  out.window = static_cast<size_t>(p.window);
  out.sinks = static_cast<size_t>(p.sinks);
  out.dense_layers = static_cast<size_t>(p.dense_layers);
  out.prefill = p.prefill;
  return out;
}

// Prefix caching under the root of this model and configuration, with the --kv-cache-dir store.
Status enable_prefix_cache(kv::KvManager& kv, const kv::PageKey& fingerprint,
                           const EngineOptions& options, const kv::KvShape& shape) {
  const kv::PageKey root = engine::prefix_cache_root(fingerprint, options, shape);
  std::unique_ptr<kv::PrefixStore> store;
  if (!options.prefix_cache.dir.empty()) {
    STRATA_ASSIGN_OR_RETURN(store, kv::PrefixStore::open(options.prefix_cache.dir, root, shape));
  }
  kv.cache().enable_prefix_cache(root, std::move(store));
  return ok_status();
}

// The context per sequence: -c, else the trained one up to kDefaultMaxContext. Learned positions
// (BERT) end at the trained context.
Result<size_t> context_size(const EngineOptions& options, const model::ModelConfig& c) {
  const size_t context = options.context > 0 ? static_cast<size_t>(options.context)
                                             : std::min(c.n_ctx_train, kDefaultMaxContext);
  if (c.learned_positions && context > c.n_ctx_train) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a context of " + std::to_string(context) + " tokens is past the " +
                          std::to_string(c.n_ctx_train) + " positions " + c.arch_name +
                          " learned; lower -c to " + std::to_string(c.n_ctx_train) + " or less");
  }
  return context;
}

// What callers see of the loaded model.
ModelSummary summarize(const model::Model& model, size_t context) {
  const model::ModelConfig& c = model.config();
  ModelSummary m;
  m.architecture = c.arch_name;
  m.name = model.file().get_string("general.name").value_or("");
  m.n_vocab = c.n_vocab;
  m.n_ctx_train = c.n_ctx_train;
  m.encoder = c.encoder;
  m.n_embd = c.n_embd;
  m.n_layers = c.n_layers;
  m.n_heads = c.n_heads;
  m.n_kv_heads = c.n_kv_heads;
  m.context = context;
  m.weight_bytes = model.weights().bytes;
  m.simd_targets = simd_targets_description();
  m.interleaved_matrices = model.interleaved_matrices();
  // GGUF's LLAMA_POOLING_TYPE: 0 none, 1 mean, 2 cls, 3 last (4, rank, is a reranker's head).
  constexpr Pooling kByType[] = {Pooling::kNone, Pooling::kMean, Pooling::kCls, Pooling::kLast};
  m.pooling = c.pooling_type < 4 ? kByType[c.pooling_type] : Pooling::kNone;
  for (const gguf::TensorInfo& t : model.file().tensors()) m.n_params += t.n_elements;
  if (const gguf::Value* type = model.file().find("general.file_type")) {
    if (std::optional<int64_t> id = type->as_int(); id && *id >= 0) {
      m.file_type = gguf::file_type_name(static_cast<uint64_t>(*id));
    }
  }
  return m;
}

}  // namespace

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& options) {
  STRATA_RETURN_IF_ERROR(check_thread_count(options.threads));
  if (options.context < 0 || options.max_sequences <= 0 || options.batch_tokens <= 0 ||
      options.page_size <= 0 || options.kv.pages < 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "context, max_sequences, batch_tokens and page_size must be positive, and "
                      "the KV pages not negative");
  }
  if (options.kv.sparse.enabled) STRATA_RETURN_IF_ERROR(check_sparse_attention(options.kv.sparse));
  STRATA_RETURN_IF_ERROR(check_speculative(options.speculative));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->pool = std::make_unique<ThreadPool>(static_cast<size_t>(options.threads));
  const auto mode = options.use_mmap ? MappedFile::Mode::kMmap : MappedFile::Mode::kResident;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<gguf::File> file,
                          gguf::File::open(options.model_path, mode));
  // Before the model rearranges its weights in place.
  const std::optional<kv::PageKey> fingerprint =
      options.prefix_cache.enabled ? std::optional(engine::model_fingerprint(*file)) : std::nullopt;
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
  STRATA_ASSIGN_OR_RETURN(const size_t context, context_size(options, c));
  impl->model->use_context(context);
  const size_t page = static_cast<size_t>(options.page_size);
  kv::KvShape kv_shape = impl->model->kv_shape(page);
  engine::KvPlanInput kv_input{.policy = options.kv,
                               .shape = kv_shape,
                               .context = context,
                               .sequences = static_cast<size_t>(options.max_sequences),
                               .batch_tokens = static_cast<size_t>(options.batch_tokens)};
  STRATA_ASSIGN_OR_RETURN(const engine::KvPlan kv_plan, engine::plan_kv_cache(kv_input));
  // The plan counts pages; the precise layers only change a low-bit page's bytes.
  STRATA_ASSIGN_OR_RETURN(
      kv_shape.precise_layers,
      engine::calibrate_precise_layers(*impl->model, impl->tokenizer->bos(), kv_plan,
                                       options.kv.precise_layers, page, *impl->pool));
  kv_input.shape = kv_shape;
  const double kv_bytes = plan_bytes(kv_plan, kv_shape);
  STRATA_RETURN_IF_ERROR(check_kv_budget(kv_input, kv_bytes));
  STRATA_RETURN_IF_ERROR(check_kv_fits(kv_input, kv_bytes, impl->model->weights().bytes));
  try {
    impl->kv = std::make_unique<kv::KvManager>(kv_shape, kv_plan.arenas);
  } catch (const std::runtime_error& e) {  // an offload file that cannot be made (kv_pool.h)
    return make_error(ErrorCode::kInvalidArgument, e.what());
  }
  impl->kv->cache().set_tiers(kv_plan.tiers);
  impl->kv->cache().set_attention_mode(kv_attention_mode(options.kv.attention));
  impl->kv->cache().set_sparse(kv_sparse_policy(options.kv.sparse, kv_shape));
  if (fingerprint) {
    STRATA_RETURN_IF_ERROR(enable_prefix_cache(*impl->kv, *fingerprint, options, kv_shape));
  }
  if (!options.speculative.draft_model.empty()) STRATA_RETURN_IF_ERROR(impl->load_draft(context));
  impl->constraints = std::make_unique<engine::ConstraintCompiler>(*impl->tokenizer);
  impl->scheduler =
      std::make_unique<engine::Scheduler>(*impl->kv, static_cast<size_t>(options.max_sequences),
                                          static_cast<size_t>(options.batch_tokens));

  impl->summary = summarize(*impl->model, context);
  if (options.pooling) impl->summary.pooling = *options.pooling;
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
  if (request.embed) return im.submit_embedding(request, std::move(on_token));
  if (im.summary.encoder) {
    return make_error(ErrorCode::kInvalidArgument,
                      "this is an embedding model (" + im.summary.architecture +
                          "): it has no output head and cannot generate text; ask it for "
                          "embeddings (/v1/embeddings, strata embed)");
  }
  // Prompt plus at least one generated token.
  STRATA_RETURN_IF_ERROR(
      im.check_tokens(request.prompt, context - 1,
                      "the prompt has " + std::to_string(request.prompt.size()) +
                          " tokens but the context holds " + std::to_string(context) +
                          " (prompt plus at least one generated token); shorten it or raise -c"));
  if (request.max_tokens <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "max_tokens must be at least 1");
  }
  if (request.speculation == SpeculationKind::kDraft && !im.draft) {
    return make_error(ErrorCode::kInvalidArgument,
                      "speculative decoding with a draft model needs one loaded (--draft FILE)");
  }
  if (request.max_draft && (*request.max_draft < 0 || *request.max_draft > kMaxDraft)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the draft length must be 0 to " + std::to_string(kMaxDraft));
  }
  STRATA_RETURN_IF_ERROR(im.check_queue());
  sampling::SamplingParams params = to_sampling_params(request.sampling);
  params.logprobs = request.logprobs || request.top_logprobs > 0;
  params.top_logprobs = request.top_logprobs;
  STRATA_RETURN_IF_ERROR(params.validate(im.n_vocab()));
  STRATA_ASSIGN_OR_RETURN(sampling::Sampler sampler, sampling::Sampler::create(params));
  // Prompt plus generated tokens, capped by the context.
  const size_t max_length =
      std::min(context, request.prompt.size() + static_cast<size_t>(request.max_tokens));
  std::unique_ptr<engine::SequenceConstraint> constraint;
  if (request.constraint.kind != ConstraintKind::kNone) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::CompiledGrammar> grammar,
                            im.constraints->compile(request.constraint));
    constraint = std::make_unique<engine::SequenceConstraint>(grammar, request.constraint.triggers,
                                                              max_length - request.prompt.size());
  }

  std::optional<kv::SparsePolicy> sparse;
  if (!request.attention.empty()) {
    STRATA_ASSIGN_OR_RETURN(sparse, im.request_sparse(request.attention));
  }

  engine::Sequence& s = im.sequences.emplace_back();
  s.id = im.next_id++;
  if (sparse) im.kv->cache().set_sequence_sparse(s.id, *sparse);
  s.tokens = request.prompt;
  s.n_prompt = request.prompt.size();
  s.max_length = max_length;
  s.ignore_eos = request.ignore_eos;
  s.report_admission = request.report_admission;
  s.cache_salt = request.cache_salt;
  s.speculation = request.speculation.value_or(im.options.speculative.kind);
  s.draft_length = engine::DraftLength(
      static_cast<size_t>(request.max_draft.value_or(im.options.speculative.max_draft)),
      static_cast<size_t>(im.options.speculative.min_draft),
      im.acceptance_history[static_cast<size_t>(s.speculation)]);
  s.sampler = std::make_unique<sampling::Sampler>(std::move(sampler));
  s.detokenizer = std::make_unique<tokenizer::StreamingDetokenizer>(*im.tokenizer);
  s.stop = std::make_unique<engine::StopMatcher>(request.stop);
  s.constraint = std::move(constraint);
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
  if (it == im.sequences.end() || it->finished()) return false;
  im.finish(*it, FinishReason::kCancelled);
  if (!im.in_step) im.drop_finished();
  return true;
}

EngineLoad Engine::load() const {
  const Impl& im = *impl_;
  EngineLoad load;
  load.running = im.scheduler->n_running();
  load.waiting = im.scheduler->n_waiting();
  load.kv_pages_total = im.kv->total_pages();
  load.kv_pages_used = im.kv->used_pages();
  const kv::KvCache& cache = im.kv->cache();
  load.kv_positions = cache.stored_positions();
  load.kv_f16_bytes = load.kv_positions * kv::page_bytes(cache.shape(), kv::KvPrecision::kF16) /
                      cache.shape().page_size;
  for (kv::KvPrecision p : cache.pool().precisions()) {
    const size_t pages = cache.pool().used_pages(p);
    if (pages == 0) continue;
    const size_t bytes = cache.pool().used_bytes(p);
    load.kv_pages_by_precision[kv::precision_name(p)] = pages;
    load.kv_bytes_by_precision[kv::precision_name(p)] = bytes;
    load.kv_bytes_used += bytes;
  }
  load.page_size = static_cast<size_t>(im.options.page_size);
  load.preemptions = im.scheduler->n_preemptions();
  load.prefix_cache_queries = im.kv->prefix_counters().queries;
  load.prefix_cache_hits = im.kv->prefix_counters().hits;
  load.prefix_cache_pages = cache.prefix_index().size();
  for (const engine::Sequence& s : im.sequences) {
    if (s.finished()) continue;
    load.sequences.push_back({s.id, engine::status_name(s.status), s.embed, s.n_prompt, s.n_cached,
                              s.n_computed, s.embed ? 0 : s.n_generated(), s.max_length});
  }
  load.spec_drafts = im.spec.drafts;
  load.spec_draft_tokens = im.spec.draft_tokens;
  load.spec_accepted_tokens = im.spec.accepted_tokens;
  load.spec_accepted_per_position = im.spec.accepted_per_position;
  return load;
}

size_t Engine::save_prefix_cache() { return impl_->kv->cache().save_prefix_cache(); }

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
  // The admission event brings the prefix cache's hit; the caller sees it only if it asked.
  GenerationRequest with_admission = request;
  with_admission.report_admission = true;
  auto admitted = [&](const TokenEvent& e) {
    if (e.admitted) stats.cached_tokens = e.cached_tokens;
    if (e.admitted && !request.report_admission) return true;
    return callback(e);
  };
  STRATA_RETURN_IF_ERROR(submit(with_admission, admitted));
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
  STRATA_RETURN_IF_ERROR(im.check_tokens(tokens, im.summary.context,
                                         std::to_string(tokens.size()) +
                                             " tokens do not fit the context of " +
                                             std::to_string(im.summary.context)));
  const kv::SeqId seq = im.next_id++;
  const size_t V = im.n_vocab();
  const size_t chunk = static_cast<size_t>(im.options.batch_tokens);
  std::vector<float> out(all_positions ? tokens.size() * V : V);
  Status status = ok_status();
  for (size_t start = 0; start < tokens.size() && status.ok(); start += chunk) {
    const size_t n = std::min(tokens.size() - start, chunk);
    const bool last = start + n == tokens.size();
    // Chunk by chunk, as the step allocates: with KV tiers, the pages that aged out of the hot
    // window move to their tier before the next chunk takes hot pages.
    if (!im.kv->allocate(seq, n)) {
      status = make_error(ErrorCode::kOutOfRange,
                          "the KV cache has no room for " + std::to_string(tokens.size()) +
                              " more positions; raise the context size or run fewer sequences");
      break;
    }
    model::Batch batch;
    append_positions(batch, seq, tokens, start, n, all_positions ? n : (last ? 1 : 0));
    float* dst = all_positions ? out.data() + start * V : out.data();
    status = im.model->forward(batch, im.kv->cache(), *im.pool, dst);
  }
  im.kv->free(seq);
  if (!status.ok()) return status.error();
  return out;
}

// The draft runs between the model's passes, never beside them: a budget of its own
// (--draft-threads) is a pool of that many threads, which take turns with the model's.
Status Engine::Impl::load_draft(size_t context) {
  const SpeculativeOptions& o = options.speculative;
  const auto threads = static_cast<size_t>(o.draft_threads);
  if (threads > 0 && threads != pool->num_threads()) {
    draft_pool = std::make_unique<ThreadPool>(threads);
  }
  STRATA_ASSIGN_OR_RETURN(draft,
                          engine::DraftModel::load(o.draft_model, *tokenizer, context,
                                                   static_cast<size_t>(options.max_sequences),
                                                   draft_pool ? *draft_pool : *pool));
  return ok_status();
}

Result<kv::SparsePolicy> Engine::Impl::request_sparse(const SparseAttentionOverride& o) const {
  SparseAttentionPolicy p = options.kv.sparse;
  p.enabled = o.enabled.value_or(p.enabled);
  p.budget = o.budget.value_or(p.budget);
  p.window = o.window.value_or(p.window);
  p.sinks = o.sinks.value_or(p.sinks);
  if (p.enabled) {
    STRATA_RETURN_IF_ERROR(check_sparse_attention(p));
    if (kv->cache().pool().key_summaries().empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "this engine reads every KV page; sparse attention per request needs it "
                        "started with sparse attention (--attn sparse)");
    }
  }
  return kv_sparse_policy(p, kv->cache().shape());
}

Status Engine::Impl::check_queue() const {
  if (options.max_waiting > 0 &&
      scheduler->n_waiting() >= static_cast<size_t>(options.max_waiting)) {
    return make_error(ErrorCode::kUnavailable, "the queue of waiting requests is full (" +
                                                   std::to_string(options.max_waiting) +
                                                   "); retry later");
  }
  return ok_status();
}

Status Engine::Impl::check_tokens(std::span<const TokenId> tokens, size_t max_tokens,
                                  const std::string& too_long) const {
  if (tokens.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the prompt is empty; it needs at least one token (e.g. BOS)");
  }
  if (tokens.size() > max_tokens) return make_error(ErrorCode::kOutOfRange, too_long);
  for (TokenId t : tokens) {
    if (t < 0 || static_cast<size_t>(t) >= n_vocab()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "prompt token id " + std::to_string(t) + " is outside the vocabulary");
    }
  }
  return ok_status();
}

}  // namespace strata
