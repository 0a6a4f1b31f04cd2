// strata's public API: everything the CLI, the server and the benchmarks use.
//
// An Engine owns a model, its KV cache and a thread pool, and runs requests in steps (schedule,
// execute, mask, sample, update). generate() runs one request to completion; submit() + step()
// run many at once with continuous batching.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/compile_budget.h"
#include "strata/output_constraint.h"
#include "strata/result.h"
#include "strata/threads.h"

namespace strata {

using TokenId = int32_t;

// Storage precision of KV cache pages. f32, f16 and bf16 store elements; q8_0 and q4_0 are
// GGML's blocks (llama.cpp's -ctk/-ctv types, 8.5 and 4.5 bits); r4 and r3 are strata's rotated
// formats (a Hadamard rotation of each head, keys per channel and values per position, 4 and 3
// bits plus scales: about 4.4 and 3.4 bits at head size 64); r8 is q8_0 in that rotated space
// (8.5 bits, less error than q8_0: the rotation shrinks each block's largest element).
enum class KvPrecision { kF32, kF16, kBF16, kQ8_0, kQ4_0, kR4, kR3, kR8 };

// The command-line names: "f32", "f16", "bf16", "q8_0", "q4_0", "r4", "r3", "r8".
const char* kv_precision_name(KvPrecision p);
Result<KvPrecision> parse_kv_precision(std::string_view name);

// KV precision by age (see KvCachePolicy::tiers). Written as
// "sink=N,hot=N,warm=TYPE:N,cold=TYPE" (any subset, any order) or "default".
struct KvTierPolicy {
  int sink = 0;  // the first positions stay in the write precision (attention sinks)
  int hot = 0;   // the last positions stay in the write precision
  std::optional<KvPrecision> warm;
  int warm_tokens = 0;  // positions before the hot window kept warm when there is a cold tier
  std::optional<KvPrecision> cold;  // everything older

  bool enabled() const { return warm.has_value() || cold.has_value(); }
};
// What "--kv-tiers default" means.
KvTierPolicy default_kv_tiers();
Result<KvTierPolicy> parse_kv_tiers(std::string_view spec);
std::string kv_tiers_string(const KvTierPolicy& tiers);

// How attention reads the KV cache. kExact rounds as the reference engine's CPU attention does
// (an f16 accumulator rounded after every key on f16 pages, std::exp per key), query by query:
// logits agree with it to ~1e-6. kFast reads each page once for a tile of up to 16 queries of
// one sequence, in f32 with a vector exp (FlashAttention-2): much faster prompt processing over
// long contexts; outputs within ~1e-6 relative of kExact on f32 pages, ~1e-3 on f16 pages (the
// exact path's own f16 rounding). A decode step (one query of its sequence) reads as kExact.
enum class AttentionMode { kExact, kFast };

// Query-aware sparse attention (Quest): a decode step reads, per layer and KV head, the first
// `sinks` positions, the last `window`, and the older pages whose keys can score highest for
// its query (an upper bound on q·k from each page's per-channel key minima and maxima), up to
// `budget` positions in all; softmax is exact over what it reads. Positions are rounded to whole
// KV pages. A context within the budget reads densely, as do prompt chunks unless `prefill`.
struct SparseAttentionPolicy {
  bool enabled = false;  // --attn sparse (dense: every page)
  int budget = 512;      // --attn-budget: positions read per query, sinks and window included
  int window = 128;      // --attn-window: the recent positions, always read (at least 1)
  int sinks = 32;        // --attn-sinks: the first positions, always read
  int dense_layers = 2;  // --attn-dense-layers: the first layers read every page
  // Prompt chunks select too, each query its own pages: what a teacher-forced evaluation needs so
  // that every scored position reads as a decode step would (strata eval sets it).
  bool prefill = false;
};
Status check_sparse_attention(const SparseAttentionPolicy& policy);
// A request's own sparse attention (the server's `attn`, `attn_budget`, `attn_window` and
// `attn_sinks` fields): each field given replaces the engine's. One that selects needs an engine
// created with sparse attention enabled, whose pages keep the key summaries selection reads.
struct SparseAttentionOverride {
  std::optional<bool> enabled;
  std::optional<int> budget, window, sinks;
  bool empty() const { return !enabled && !budget && !window && !sinks; }
};

// How the KV cache stores keys and values. Every page has its own precision: pages are written
// in `hot` and, with tiers, re-encoded to the warm and cold precisions as they age.
struct KvCachePolicy {
  // Precision of the pages being written (--kv-type), and without tiers of every page. f16
  // halves the cache and matches the reference engine's numerics; f32 accumulates attention
  // exactly. A per-channel type (r4, r3) alone means: written f16, each page re-encoded once
  // full; r8 is written as it is.
  KvPrecision hot = KvPrecision::kF16;
  // Older pages at lower precision (--kv-tiers). The pool then holds an arena per precision,
  // sized from the policy for `context` positions per sequence.
  KvTierPolicy tiers;
  // Pages in the pool; 0: enough for every sequence's whole context (context * max_sequences
  // positions). Fewer oversubscribe the pool: a sequence short of pages waits, or the most
  // recently admitted sequence is preempted (its pages freed, its keys and values recomputed
  // from its tokens later).
  int pages = 0;
  // The most bytes the whole KV cache may take (--kv-memory); 0: what fits beside the weights in
  // the machine's memory. A policy that needs more is refused at start, naming what it needs
  // and what the default tiers would need instead.
  size_t memory_bytes = 0;
  // Non-empty (--kv-offload): the coldest arena (the cold tier's, or the only one without tiers)
  // lives in an unlinked file in this folder, whose pages the kernel writes out under memory
  // pressure and reads back when attended; those bytes do not count against memory_bytes or the
  // machine's memory, only against the disk (reserved at start).
  std::string offload_dir;
  // How attention reads the pages. Here rather than in EngineOptions: like the precision above,
  // it is a choice of the cache's numerics, and it travels with the cache to kv::attend, the one
  // place that reads pages. kFast (prompt tiles in f32, as today's reference engine reads on
  // CPUs) is 3.5x faster over a 4K prompt than kExact, which rounds as the reference build that
  // made stories260K's reference outputs did (f16 accumulation). Decode reads pages by block in
  // f32 under kFast too (docs/numerics.md).
  AttentionMode attention = AttentionMode::kFast;
  SparseAttentionPolicy sparse;
  // Layers whose r4 and r3 pages are stored one format up (r8, r4) (--kv-precise-layers): the
  // ones whose scores low-bit keys move most, measured at load over a fixed token sequence
  // (src/engine/kv_calibration.h). nullopt: an eighth of the layers, rounded up (none under 4
  // layers); 0 keeps every layer in the page's format.
  std::optional<size_t> precise_layers;
};

// Prefix caching: a prompt that begins as an earlier one did reuses the keys and values of those
// whole pages instead of computing them again (vLLM's automatic prefix caching). Outputs are the
// same with or without it: the pages hold what the model would compute again.
struct PrefixCacheOptions {
  bool enabled = false;  // the server's default is on (--no-prefix-cache); run and bench off
  // A folder that keeps the cached pages across restarts (--kv-cache-dir); "" for none. Pages
  // saved by another model or KV configuration are ignored there, torn ones skipped with a
  // warning.
  std::string dir;
};

// Speculative decoding: each decode step of a sequence verifies up to `max_draft` guessed
// tokens in the same forward pass as its own token, and keeps the longest confirmed run (greedy:
// the guesses the model's argmax agrees with; sampling: the rejection rule that keeps the output
// distribution exactly the model's). Outputs do not change; decode gets faster when guesses hold.
enum class SpeculationKind {
  kNone,
  // Prompt lookup: the tokens that followed the latest earlier occurrence of the last n tokens
  // (n from ngram_max down to ngram_min) in the prompt and the output so far. No model.
  kNgram,
  // A draft model (SpeculativeOptions::draft_model: a small model with the same vocabulary)
  // guesses greedily, one decode step of its own per guess.
  kDraft,  // the last kind: tables indexed by kind have kDraft + 1 entries
};
const char* speculation_kind_name(SpeculationKind kind);
Result<SpeculationKind> parse_speculation_kind(std::string_view name);

// The most guesses one step verifies (a step runs them as one batch of positions).
inline constexpr int kMaxDraft = 32;

struct SpeculativeOptions {
  SpeculationKind kind = SpeculationKind::kNone;
  // Guesses per step at most. Each sequence's length is the one that pays best, weighing its
  // recent acceptance against what a guess costs on this machine (measured as the engine runs),
  // and no guesses when none pays; min_draft forces at least that many whenever the proposer has
  // them (llama.cpp's --draft-min).
  int max_draft = 8;
  int min_draft = 0;
  int ngram_min = 2, ngram_max = 4;
  std::string draft_model;  // GGUF file of the draft (--draft); loaded when set
  // Threads of the draft's passes (--draft-threads, llama.cpp's -td); 0: the engine's. A small
  // draft's layers are too short to share among threads: on one it runs as fast or faster.
  int draft_threads = 0;
};

Status check_speculative(const SpeculativeOptions& options);

// How an embedding pools the final-normed hidden states of a prompt's positions (GGUF
// `<arch>.pooling_type`; llama.cpp's --pooling): the mean of every position, the first (CLS) or
// the last one. kNone: the model has no pooling, and embedding requests are refused.
enum class Pooling { kNone, kMean, kCls, kLast };
const char* pooling_name(Pooling pooling);  // "none", "mean", "cls", "last"
Result<Pooling> parse_pooling(std::string_view name);

struct EngineOptions {
  std::string model_path;
  int threads = 0;        // 0: one per hardware thread; at most kMaxThreads (strata/threads.h)
  int context = 0;        // tokens per sequence; 0: the model's training context, capped at 4096
  int max_sequences = 1;  // sequences decoded at once; the KV pool holds context * max_sequences
  // Tokens per forward pass (prompt chunks and decode tokens together). Running streams wait for
  // the whole step, so this bounds the stall a long prompt causes them; on CPUs, 128 tokens
  // already process prompts as fast as 512 (the matmuls are compute bound from a few tokens on).
  int batch_tokens = 128;
  int page_size = 32;     // positions per KV page
  bool use_mmap = false;  // map weights instead of reading them into resident memory
  // Rearrange resident weight matrices at load into the layout of the CPU's fastest kernels
  // (16 rows interleaved: Q4_0, Q8_0, Q4_K and Q6_K, with AVX2 or AVX-512); a
  // memory-mapped file keeps GGUF order.
  bool interleave_weights = true;
  KvCachePolicy kv;
  PrefixCacheOptions prefix_cache;
  SpeculativeOptions speculative;
  // Requests that may wait for a free sequence slot; past it submit() fails with kUnavailable
  // at once. 0: no limit.
  int max_waiting = 0;
  // Embedding requests pool this way instead of as the model says (--pooling).
  std::optional<Pooling> pooling;
};

struct SamplingOptions {
  float temperature = 0.8f;  // 0: greedy
  int top_k = 40;            // 0: off
  float top_p = 0.95f;       // 1: off
  float min_p = 0.05f;       // 0: off
  float repeat_penalty = 1.0f;
  int repeat_last_n = 64;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  std::map<TokenId, float> logit_bias;
  uint64_t seed = 0;
};

struct GenerationRequest {
  std::vector<TokenId> prompt;  // already tokenized (with BOS if the model wants one)
  int max_tokens = 128;  // new tokens at most; generation also ends at end-of-generation tokens
  SamplingOptions sampling;
  std::vector<std::string> stop;  // generation ends before any of these strings
  bool ignore_eos = false;
  OutputConstraint constraint;
  // OpenAI logprobs: each TokenEvent carries the token's log probability and, with
  // top_logprobs > 0, that many alternatives (at most 20).
  bool logprobs = false;
  int top_logprobs = 0;
  // Send one TokenEvent with `admitted` set (and no token) when the request first gets its KV
  // pages and starts running: the end of its time in the queue.
  bool report_admission = false;
  SparseAttentionOverride attention;
  // This request's speculation in place of the engine's (the server's `speculative` field):
  // kNone turns it off, max_draft caps the guesses per step.
  std::optional<SpeculationKind> speculation;
  std::optional<int> max_draft;
  // Requests with different salts never share cached prefix pages (the OpenAI-style `cache_salt`
  // extension: tenants apart); "" shares with every other unsalted request.
  std::string cache_salt;
  // An embedding request: the prompt runs (batched with other work, as a prompt does) and the
  // final TokenEvent (finish kStop, no token) carries its pooled, L2-normalized embedding, as
  // llama.cpp's /v1/embeddings normalizes it. Nothing is generated: max_tokens, sampling,
  // stop, constraint, logprobs and speculation are ignored; the prompt may fill the context.
  bool embed = false;
};

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };
const char* finish_reason_name(FinishReason reason);

// One step's output for one request: a new token, the text it completes (whole UTF-8
// characters only; text that may begin a stop string is held back until it cannot), and whether
// the request has finished.
struct TokenLogprob {
  TokenId token = -1;
  float logprob = 0.0f;
};

struct TokenEvent {
  TokenId token = -1;
  std::string text;
  float logprob = 0.0f;                    // with GenerationRequest::logprobs
  std::vector<TokenLogprob> top_logprobs;  // best first, with top_logprobs > 0
  FinishReason finish = FinishReason::kNone;
  std::string error;                            // with kError
  ErrorCode error_code = ErrorCode::kInternal;  // with kError: the kind of failure
  bool admitted = false;         // GenerationRequest::report_admission's event: no token, no finish
  size_t cached_tokens = 0;      // with `admitted`: prompt tokens found in the prefix cache
  std::vector<float> embedding;  // GenerationRequest::embed's final event: [n_embd]
};

// Returns false to cancel the request.
using TokenCallback = std::function<bool(const TokenEvent&)>;

struct GenerationStats {
  size_t prompt_tokens = 0;
  size_t cached_tokens = 0;  // prompt tokens whose keys and values came from the prefix cache
  size_t generated_tokens = 0;
  double prompt_seconds = 0;    // submit to first token
  double generate_seconds = 0;  // first token to finish
  FinishReason finish = FinishReason::kNone;
  std::string error;  // with kError: why the request could not go on (TokenEvent::error)
};

// The engine's load, for metrics and admission decisions.
struct EngineLoad {
  size_t running = 0;  // sequences holding KV pages
  size_t waiting = 0;  // submitted, not yet admitted
  size_t kv_pages_total = 0;
  size_t kv_pages_used = 0;
  // Positions stored in the KV cache (shared pages once), the bytes of the pages holding them,
  // and what those positions would take in f16: bytes per token and compression come from these.
  size_t kv_positions = 0;
  size_t kv_bytes_used = 0;
  size_t kv_f16_bytes = 0;
  // Pages in use and their bytes per precision, by name ("f16", "q8_0", ...).
  std::map<std::string, size_t> kv_pages_by_precision;
  std::map<std::string, size_t> kv_bytes_by_precision;
  size_t page_size = 0;  // positions per page
  // Sequences preempted so far (their pages freed for others when the pool ran short; their
  // keys and values recomputed when they run again).
  size_t preemptions = 0;
  // Prefix caching: prompt tokens of admitted sequences looked up and found (vLLM's
  // prefix_cache_queries / prefix_cache_hits), and the pages findable now (held or free).
  uint64_t prefix_cache_queries = 0;
  uint64_t prefix_cache_hits = 0;
  size_t prefix_cache_pages = 0;
  // Speculative decoding so far (vLLM's spec_decode_* counters): verifications with at least one
  // guess, guesses made, guesses accepted, and accepted guesses by their position in the draft.
  uint64_t spec_drafts = 0;
  uint64_t spec_draft_tokens = 0;
  uint64_t spec_accepted_tokens = 0;
  std::vector<uint64_t> spec_accepted_per_position;
  // Every unfinished request, oldest first (llama-server's /slots shows them).
  struct Sequence {
    uint64_t id = 0;
    const char* state = "";  // "waiting", "prefilling", "decoding", "preempted"
    bool embedding = false;
    size_t prompt_tokens = 0, cached_tokens = 0, computed_tokens = 0, generated_tokens = 0;
    size_t max_length = 0;  // prompt plus max_tokens, capped by the context
  };
  std::vector<Sequence> sequences;
};

struct ModelSummary {
  std::string architecture;
  std::string name;
  size_t n_vocab = 0, n_ctx_train = 0, n_embd = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0;
  bool encoder = false;              // an embedding model without output head: cannot generate
  size_t context = 0;                // the engine's context per sequence
  size_t weight_bytes = 0;           // bytes of weights read per generated token
  std::string simd_targets;          // SIMD targets the kernels can dispatch to
  size_t interleaved_matrices = 0;   // weight matrices rearranged at load (interleave_weights)
  Pooling pooling = Pooling::kNone;  // of embedding requests: the model's or EngineOptions'
  uint64_t n_params = 0;             // elements of every tensor in the file
  std::string file_type;             // llama.cpp's name of general.file_type ("Q4_K_M"), or
};

// `strata inspect`: where exact attention goes at the last positions of a prompt, per layer and
// query head, against what sparse attention (SparseAttentionPolicy) would read there.
struct AttentionHeadProfile {
  size_t layer = 0, head = 0;
  bool dense_layer = false;  // the policy reads every page in this layer (dense_layers)
  size_t queries = 0;        // positions profiled
  // Means over those positions: the softmax's entropy in nats, and its mass in the sink pages,
  // the recent window, the pages the selection chooses and the rest (these four sum to 1).
  double entropy = 0;
  double sinks = 0, window = 0, selected = 0, rest = 0;
  std::vector<double> recalls;  // per position: the mass the selection reads, 1 - rest
  // Per position: the mass the best choice of as many pages would read (the KV head group's
  // pages of most attention), the most any page selection can reach at this budget.
  std::vector<double> best_recalls;
};
struct AttentionProfile {
  size_t positions = 0;                     // the prompt's tokens
  std::vector<AttentionHeadProfile> heads;  // layer-major: [layer][head]
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const ModelSummary& model() const;

  // Text to token ids. add_special adds BOS/EOS as the model's metadata asks; parse_special
  // turns the text of control tokens (e.g. "<|im_end|>") into those tokens.
  std::vector<TokenId> tokenize(std::string_view text, bool add_special, bool parse_special) const;
  std::string detokenize(std::span<const TokenId> ids) const;
  std::string token_piece(TokenId id) const;

  // Runs one request to completion (alone or alongside submitted ones), calling on_token for
  // every generated token.
  Result<GenerationStats> generate(const GenerationRequest& request, const TokenCallback& on_token);

  // Continuous batching: submit() queues a request and returns its id; step() runs one engine
  // step for all active requests, calling their callbacks; has_work() says whether any remain.
  // An Engine is not thread-safe: one thread submits, steps and cancels (tokenize, detokenize,
  // token_piece and model() are safe from any thread).
  Result<uint64_t> submit(const GenerationRequest& request, TokenCallback on_token);
  // Compiles an output constraint into the cache submit() reads (the 32 most recently used),
  // so that submit() on the engine thread does not stall every running sequence for it: large
  // JSON Schemas take seconds. Safe from any thread; errors are submit()'s, and, with a budget
  // (strata/compile_budget.h), kDeadlineExceeded past its deadline or kCancelled once its flag
  // is set (checked every few thousand units of work, so within milliseconds). Whatever the
  // budget, a constraint that needs more than a fixed amount of work fails with kOutOfRange.
  // A constraint found in the cache returns at once; failures are not cached.
  Status prepare_constraint(const OutputConstraint& constraint,
                            const CompileBudget& budget = {}) const;
  Status step();
  bool has_work() const;
  // Ends a submitted request: it gets a final kCancelled event and its KV pages return to the
  // pool at once. False when the id is unknown or already finished.
  bool cancel(uint64_t id);
  EngineLoad load() const;
  // Writes the prefix-cache pages the --kv-cache-dir folder does not hold yet (those of sequences
  // still running; others were saved as they were freed); returns how many. Call before exit.
  size_t save_prefix_cache();

  // Logits after evaluating `tokens` in one fresh sequence: the last position's ([n_vocab]), or
  // every position's ([n_tokens][n_vocab]) with all_positions.
  Result<std::vector<float>> evaluate(std::span<const TokenId> tokens, bool all_positions = false);

  // The pooled, L2-normalized embedding of each prompt ([n_embd] each): one embedding request
  // (GenerationRequest::embed) per prompt, run together through the step loop.
  Result<std::vector<std::vector<float>>> embed(std::span<const std::vector<TokenId>> prompts);

  // Evaluates `tokens` (dense, as a prompt) and profiles the attention of its last `queries`
  // positions (AttentionProfile) under the engine's SparseAttentionPolicy, enabled or not. The
  // engine must have been created with sparse attention enabled (its pages then keep the key
  // summaries that selection reads): kInvalidArgument otherwise, kUnsupported for head sizes
  // sparse attention cannot take.
  Result<AttentionProfile> profile_attention(std::span<const TokenId> tokens, size_t queries);

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Caps the SIMD targets the kernels dispatch to at `target` (a name ModelSummary::simd_targets
// lists, e.g. "AVX2" on an AVX-512 machine): to measure what a narrower CPU gets, or to avoid a
// target that throttles. Process-wide; call it before creating engines, since each chooses its
// weight layout for the target at hand.
Status limit_simd_targets(const std::string& target);

// `strata info`: the file's metadata and tensor table, as text or JSON, without loading weights.
Result<std::string> describe_model_file(const std::string& path, bool json);

}  // namespace strata
