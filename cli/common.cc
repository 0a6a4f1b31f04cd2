#include "cli/common.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "cli/model_store.h"

namespace strata::cli {

int report(const Error& error) {
  std::fprintf(stderr, "error: %s\n", error.message.c_str());
  return kExitBadInput;
}

CLI::Validator thread_count_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long threads = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, threads);
        if (ec == std::errc::result_out_of_range) {
          threads = text[0] == '-' ? -1 : kMaxThreads + 1LL;
        } else if (ec != std::errc() || ptr != end) {
          return "";  // not a number: CLI11's conversion error says so
        }
        // Clamped into int, then reported with the number as typed.
        const int clamped = static_cast<int>(std::clamp<long long>(threads, -1, kMaxThreads + 1LL));
        Status s = check_thread_count(clamped);
        if (s.ok()) return "";
        std::string message = s.error().message;
        const std::string number = std::to_string(clamped);
        if (size_t at = message.find(number); at != std::string::npos) {
          message.replace(at, number.size(), text);
        }
        return message;
      },
      "0.." + std::to_string(kMaxThreads), "thread count");
}

namespace {

// An option whose value is one of `names`, handed to `set` as the value it names.
template <class T>
CLI::Option* add_named_option(CLI::App& sub, const std::string& name,
                              const std::map<std::string, T>& names, std::function<void(T)> set,
                              const std::string& help) {
  return sub
      .add_option_function<std::string>(
          name, [&names, set = std::move(set)](const std::string& v) { set(names.at(v)); }, help)
      ->check(CLI::IsMember(names));
}

// A byte count as people write it: "2G", "1.5GiB", "512M", "4096" (K, M, G, T are powers of
// 1024, with or without a trailing "B" or "iB"); nullopt for anything else.
std::optional<size_t> parse_byte_size(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || value < 0) return std::nullopt;
  std::string unit(end, text.data() + text.size());
  for (const char* tail : {"iB", "B"}) {
    if (unit.size() > 1 && unit.ends_with(tail)) {
      unit.resize(unit.size() - std::strlen(tail));
      break;
    }
  }
  static const std::map<std::string, double> kScale = {
      {"", 1.0}, {"K", 0x1p10}, {"M", 0x1p20}, {"G", 0x1p30}, {"T", 0x1p40}};
  auto it = kScale.find(unit);
  if (it == kScale.end() || value * it->second > 0x1p62) return std::nullopt;
  return static_cast<size_t>(value * it->second);
}

const std::map<std::string, KvPrecision> kKvTypes = [] {
  std::map<std::string, KvPrecision> names;
  for (KvPrecision p :
       {KvPrecision::kF16, KvPrecision::kF32, KvPrecision::kBF16, KvPrecision::kQ8_0,
        KvPrecision::kQ4_0, KvPrecision::kR4, KvPrecision::kR3, KvPrecision::kR8}) {
    names[kv_precision_name(p)] = p;
  }
  return names;
}();
const std::map<std::string, AttentionMode> kAttentionModes = {{"exact", AttentionMode::kExact},
                                                              {"fast", AttentionMode::kFast}};
const std::map<std::string, bool> kSparseModes = {{"dense", false}, {"sparse", true}};
const std::map<std::string, Pooling> kPoolings = {{"none", Pooling::kNone},
                                                  {"mean", Pooling::kMean},
                                                  {"cls", Pooling::kCls},
                                                  {"last", Pooling::kLast}};

}  // namespace

CLI::Option* add_pooling_option(CLI::App& sub, std::optional<Pooling>& pooling) {
  return add_named_option<Pooling>(
      sub, "--pooling", kPoolings, [&pooling](Pooling p) { pooling = p; },
      "how embeddings pool the hidden states: mean, cls or last (default: the model's "
      "pooling_type)");
}

CLI::Option* add_kv_type_option(CLI::App& sub, const std::string& name,
                                std::function<void(KvPrecision)> set, const std::string& help) {
  return add_named_option(sub, name, kKvTypes, std::move(set), help);
}

CLI::Option* add_attention_option(CLI::App& sub, const std::string& name,
                                  std::function<void(AttentionMode)> set, const std::string& help) {
  return add_named_option(sub, name, kAttentionModes, std::move(set), help);
}

CLI::Option* add_sparse_mode_option(CLI::App& sub, const std::string& name,
                                    std::function<void(bool)> set, const std::string& help) {
  return add_named_option(sub, name, kSparseModes, std::move(set), help);
}

CLI::Option* add_kv_tiers_option(CLI::App& sub, KvTierPolicy& tiers) {
  return sub.add_option_function<std::string>(
      "--kv-tiers",
      [&tiers](const std::string& spec) {
        Result<KvTierPolicy> parsed = parse_kv_tiers(spec);
        if (!parsed.ok()) throw CLI::ValidationError("--kv-tiers", parsed.error().message);
        tiers = *parsed;
      },
      "KV precision by age: sink=N,hot=N,warm=TYPE:N,cold=TYPE; the first sink and the last "
      "hot positions stay in --kv-type, the warm positions before them and all older ones are "
      "re-encoded as they age. 'default' is " +
          kv_tiers_string(default_kv_tiers()));
}

void add_sparse_attention_flags(CLI::App& sub, SparseAttentionPolicy& sparse) {
  add_sparse_mode_option(
      sub, "--attn", [&sparse](bool on) { sparse.enabled = on; },
      "which KV pages a decode step reads: dense (default: all) or sparse (the sinks, the "
      "recent window and the pages whose keys can score highest for the query, up to "
      "--attn-budget positions)");
  sub.add_option("--attn-budget", sparse.budget,
                 "sparse attention: positions one query reads, sinks and window included")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--attn-window", sparse.window, "sparse attention: recent positions always read")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--attn-sinks", sparse.sinks, "sparse attention: first positions always read")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_option("--attn-dense-layers", sparse.dense_layers,
                 "sparse attention: the first layers read every page")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

CLI::Validator model_name_resolver() {
  return CLI::Validator(
      [](std::string& value) {
        value = resolve_model(value);
        return std::string();
      },
      "FILE|NAME");
}

void add_model_flags(CLI::App& sub, EngineOptions& options) {
  sub.add_option("-m,--model", options.model_path,
                 "GGUF model file, or the name of one strata pull fetched (strata list)")
      ->required()
      ->transform(model_name_resolver());
  sub.add_option("-t,--threads", options.threads, "threads (0: one per core)")
      ->check(thread_count_validator());
  sub.add_option("-c,--ctx-size", options.context,
                 "context size in tokens (0: the model's, at most 4096)")
      ->check(CLI::NonNegativeNumber);
  sub.add_flag("--mmap", options.use_mmap,
               "memory-map the weights instead of reading them into memory (faster start, but the "
               "page cache may evict them mid-run)");
  sub.add_flag("!--no-interleave", options.interleave_weights,
               "keep weight matrices in GGUF row order instead of rearranging them at load for "
               "the interleaved kernels (x86 with AVX2 or AVX-512)");
  // f16 halves the cache and matches the reference engine's numerics; f32 accumulates attention
  // exactly, for long contexts where f16 rounding adds up; the others compress it.
  add_kv_type_option(
      sub, "--kv-type", [&options](KvPrecision p) { options.kv.hot = p; },
      "KV cache precision of every page (with --kv-tiers: of the hot tier): f16 (default), "
      "f32, bf16, q8_0 or q4_0 (llama.cpp's -ctk/-ctv types), r8, r4 or r3 (strata's rotated "
      "8-, 4- and 3-bit formats)");
  // llama.cpp's -ctk/-ctv: strata keeps keys and values of a page at one precision, so both
  // name it and must agree.
  auto typed = std::make_shared<std::optional<KvPrecision>>();
  for (const char* name : {"--cache-type-k", "--cache-type-v"}) {
    add_kv_type_option(
        sub, name,
        [&options, typed, name](KvPrecision p) {
          if (*typed && **typed != p) {
            throw CLI::ValidationError(name,
                                       "strata keeps keys and values at one precision: "
                                       "give -ctk and -ctv the same type");
          }
          *typed = p;
          options.kv.hot = p;
        },
        "llama.cpp's -ctk / -ctv: --kv-type (keys and values take the same type)");
  }
  add_kv_tiers_option(sub, options.kv.tiers);
  sub.add_option_function<std::string>(
         "--kv-precise-layers",
         [&options](const std::string& text) {
           if (text == "auto") {
             options.kv.precise_layers.reset();
             return;
           }
           size_t n = 0;
           const char* end = text.data() + text.size();
           const auto [ptr, ec] = std::from_chars(text.data(), end, n);
           if (ec != std::errc() || ptr != end) {
             throw CLI::ValidationError("--kv-precise-layers",
                                        "'" + text + "' is not a layer count: write auto or N");
           }
           options.kv.precise_layers = n;
         },
         "layers whose r4/r3 pages are kept one format up (r8/r4): the N whose attention "
         "low-bit keys disturb most, measured at load; auto (default) is an eighth of the "
         "layers, 0 none")
      ->type_name("N|auto");
  // fast reads each KV page once per tile of prompt tokens in f32; exact matches the reference
  // build's f16-accumulating attention (the stories260K reference outputs).
  add_attention_option(
      sub, "--attention", [&options](AttentionMode m) { options.kv.attention = m; },
      "attention of prompts: fast (default; tiles of prompt tokens in f32, FlashAttention-2 "
      "style, as llama.cpp reads on CPUs) or exact (rounds as the llama.cpp build that made "
      "stories260K's reference outputs did, f16 accumulation; 3.5x slower over a 4K prompt)");
  add_sparse_attention_flags(sub, options.kv.sparse);
  sub.add_option("--kv-pages", options.kv.pages,
                 "KV cache pages (0: the context for every parallel sequence); fewer let more "
                 "sequences run while they are short: one short of pages waits, or the most "
                 "recently started is paused and recomputed later")
      ->check(CLI::NonNegativeNumber);
  sub.add_option_function<std::string>(
         "--kv-memory",
         [&options](const std::string& text) {
           const std::optional<size_t> bytes = parse_byte_size(text);
           if (!bytes) {
             throw CLI::ValidationError("--kv-memory", "'" + text +
                                                           "' is not a size: write it as 2G, "
                                                           "1.5GiB, 512M or a byte count");
           }
           options.kv.memory_bytes = *bytes;
         },
         "the most memory the KV cache may take, e.g. 2G, 1.5GiB or 512M (K/M/G are 1024's; "
         "default: what fits beside the weights); a context that needs more is refused with "
         "what --kv-tiers default would take instead; pages offloaded by --kv-offload do not "
         "count")
      ->type_name("SIZE");
  sub.add_option("--kv-offload", options.kv.offload_dir,
                 "keep the coldest KV pages (--kv-tiers' cold tier, or every page without tiers) "
                 "in a file in this folder, which the kernel writes out under memory pressure and "
                 "reads back when attended; its disk space is reserved at start")
      ->type_name("DIR");
  // Applied while the flags are parsed, so before any engine exists.
  sub.add_option_function<std::string>(
      "--simd",
      [](const std::string& target) {
        if (Status s = limit_simd_targets(target); !s.ok()) {
          throw CLI::ValidationError("--simd", s.error().message);
        }
      },
      "use no SIMD target better than this one (e.g. AVX2 on an AVX-512 CPU; the list is in "
      "`strata bench`'s header)");
}

void add_speculative_flags(CLI::App& sub, SpeculativeOptions& options) {
  sub.add_option_function<std::string>(
         "--spec",
         [&options](const std::string& name) {
           Result<SpeculationKind> kind = parse_speculation_kind(name);
           if (!kind.ok()) throw CLI::ValidationError("--spec", kind.error().message);
           options.kind = *kind;
         },
         "speculative decoding: none (default), ngram (guesses from the prompt and the output "
         "so far) or draft (a small model's, --draft): verified in the same forward pass, the "
         "output does not change")
      ->type_name("none|ngram|draft");
  sub.add_option_function<std::string>(
      "--draft,--model-draft",
      [&options](const std::string& path) {
        options.draft_model = path;
        if (options.kind == SpeculationKind::kNone) options.kind = SpeculationKind::kDraft;
      },
      "GGUF file of a draft model with the same vocabulary (implies --spec draft)");
  sub.add_option("--draft-max", options.max_draft,
                 "guesses verified per step at most (the length that pays best, from the "
                 "acceptance and the measured cost of a guess)")
      ->check(CLI::Range(0, kMaxDraft))
      ->capture_default_str();
  sub.add_option("--draft-min", options.min_draft,
                 "guesses per step at least, whenever the proposer has them (0: none when "
                 "guessing does not pay)")
      ->check(CLI::Range(0, kMaxDraft))
      ->capture_default_str();
  sub.add_option("--draft-threads,--threads-draft", options.draft_threads,
                 "threads of the draft model's passes (0: the model's; a small draft is as fast "
                 "or faster on 1)")
      ->check(CLI::Range(0, kMaxThreads))
      ->capture_default_str();
  sub.add_option("--spec-ngram-min", options.ngram_min, "shortest n-gram looked up")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub.add_option("--spec-ngram-max", options.ngram_max, "longest n-gram looked up")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

CLI::Option* add_n_predict_option(CLI::App& sub, int& n_predict, const std::string& help) {
  return sub.add_option("-n,--n-predict", n_predict, help + " (-1: until the context ends)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            long long n = 0;
            const char* end = text.data() + text.size();
            auto [ptr, ec] = std::from_chars(text.data(), end, n);
            if (ec != std::errc() || ptr != end) return "";  // CLI11's conversion error says so
            if (n >= 1 || n == -1 || n == -2) return "";
            return "-n must be positive, or -1 to generate until the context ends (got " + text +
                   ")";
          },
          "N>0|-1", "token count"));
}

void add_sampling_flags(CLI::App& sub, SamplingOptions& s) {
  sub.add_option("--temp", s.temperature, "temperature (0: greedy)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_option("--top-k", s.top_k, "top-k (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_option("--top-p", s.top_p, "top-p (1: off)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub.add_option("--min-p", s.min_p, "min-p (0: off)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub.add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_option("--repeat-last-n", s.repeat_last_n, "tokens the repetition penalty looks back")
      ->capture_default_str();
  sub.add_option("--presence-penalty", s.presence_penalty, "presence penalty")
      ->capture_default_str();
  sub.add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty")
      ->capture_default_str();
}

void add_chat_template_option(CLI::App& sub, std::string& chat_template) {
  sub.add_option("--chat-template,--chat-template-file", chat_template,
                 "chat template in place of the model's: 'chatml' or a Jinja file");
}

int max_tokens_for(int n_predict, const Engine& engine) {
  if (n_predict > 0) return n_predict;
  return static_cast<int>(std::min<size_t>(engine.model().context, INT32_MAX));
}

void warn_if_beyond_trained_context(const EngineOptions& options, const ModelSummary& model) {
  if (options.context <= 0 || model.n_ctx_train == 0) return;
  if (static_cast<size_t>(options.context) <= model.n_ctx_train) return;
  std::fprintf(stderr,
               "warning: context %d is beyond the model's trained context (%zu tokens): output "
               "past %zu tokens may degrade\n",
               options.context, model.n_ctx_train, model.n_ctx_train);
}

std::unique_ptr<Engine> load_engine(const EngineOptions& options, int& exit_code) {
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  if (!engine.ok()) {
    exit_code = report(engine.error());
    return nullptr;
  }
  exit_code = kExitOk;
  warn_if_beyond_trained_context(options, (*engine)->model());
  return std::move(engine).value();
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace strata::cli
