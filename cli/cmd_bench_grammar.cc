// strata bench-grammar: MaskBench-style measurement of JSON Schema constrained decoding. For
// each schema of a directory laid out like JSONSchemaBench (<Subset>/<id>.json with `schema` and
// `tests[]`), compile it against a vocabulary (timed), then feed every valid instance token by
// token, computing the allowed-token mask before each token (timed), and feed every invalid
// instance to see that it is rejected.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "strata/json_depth.h"
#include "strata/structured.h"

// The grammar writes object keys in the schema's order; instances are fed in that order (the
// same JSON value). Declared by the JSON-Schema front end (src/grammar/json_schema.h) until the
// public facade (strata/structured.h) exposes it.
namespace strata::grammar {
Result<std::string> order_instance_like_schema(std::string_view schema_json,
                                               std::string_view instance_json, int indent);
}  // namespace strata::grammar

namespace strata::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct BenchGrammarFlags {
  std::string schemas;
  std::string vocab;
  int threads = 1;
  std::string formats = "assert";
  bool json = false;
  bool verbose = false;
};

// What one worker measured.
struct Tally {
  size_t schemas = 0, compiled = 0, valid = 0, valid_rejected = 0, invalid = 0,
         invalid_accepted = 0, tokens = 0;
  std::vector<double> compile_ms;
  std::vector<double> mask_us;
  std::vector<std::string> notes;  // per-schema failures, for --verbose
};

double elapsed_us(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Feeds `text` token by token; true when every token is allowed and the text may end there.
// With `mask_us`, the mask before each token is computed and timed.
bool feed(const std::shared_ptr<const CompiledConstraint>& compiled,
          const ConstraintVocabulary& vocab, const std::string& text, std::vector<double>* mask_us,
          size_t* tokens) {
  const std::vector<TokenId> ids = vocab.tokenize(text);
  ConstraintMatcher matcher(compiled);
  std::vector<uint32_t> mask(matcher.mask_words());
  for (TokenId id : ids) {
    if (mask_us) {
      const auto start = Clock::now();
      matcher.fill_next_token_bitmask(mask);
      mask_us->push_back(elapsed_us(start));
      ++*tokens;
      if (!((mask[static_cast<size_t>(id) / 32] >> (id % 32)) & 1)) return false;
    }
    if (!matcher.accept_token(id)) return false;
  }
  return matcher.can_end();
}

// Feeds a schema's test instances: valid ones token by token with the mask timed before each,
// invalid ones to see them rejected.
void feed_tests(const fs::path& file, const Json& tests, const std::string& schema,
                const std::shared_ptr<const CompiledConstraint>& compiled,
                const ConstraintVocabulary& vocab, Tally* tally) {
  for (const Json& test : tests) {
    if (!test.contains("data") || !test.contains("valid")) continue;
    const bool valid = test["valid"] == Json(true);
    auto text = grammar::order_instance_like_schema(schema, test["data"].dump(), -1);
    if (!text.ok()) continue;
    if (valid) {
      ++tally->valid;
      if (!feed(compiled, vocab, *text, &tally->mask_us, &tally->tokens)) {
        ++tally->valid_rejected;
        tally->notes.push_back(file.string() +
                               ": valid instance rejected: " + text->substr(0, 200));
      }
    } else {
      ++tally->invalid;
      if (feed(compiled, vocab, *text, nullptr, nullptr)) {
        ++tally->invalid_accepted;
        tally->notes.push_back(file.string() +
                               ": invalid instance accepted: " + text->substr(0, 200));
      }
    }
  }
}

void bench_schema(const fs::path& file, const std::shared_ptr<const ConstraintVocabulary>& vocab,
                  FormatPolicy formats, bool progress, Tally* tally) {
  ++tally->schemas;
  auto content = read_file(file.string());
  // The parsed file is copied and dumped below, both recursive: deep files are refused first.
  if (content.ok() && json_nesting_depth(*content) > kMaxJsonDepth) {
    tally->notes.push_back(file.string() + ": nests arrays and objects " +
                           std::to_string(json_nesting_depth(*content)) + " levels deep; at most " +
                           std::to_string(kMaxJsonDepth) + " are accepted");
    return;
  }
  const Json doc = content.ok() ? Json::parse(*content, nullptr, false) : Json();
  if (!doc.is_object() || !doc.contains("schema")) {
    tally->notes.push_back(file.string() + ": not a JSONSchemaBench file");
    return;
  }
  OutputConstraint constraint;
  constraint.kind = ConstraintKind::kJsonSchema;
  constraint.text = doc["schema"].dump();
  constraint.formats = formats;
  const auto start = Clock::now();
  auto compiled = CompiledConstraint::compile(constraint, vocab);
  const double ms = elapsed_us(start) / 1000.0;
  if (!compiled.ok()) {
    tally->notes.push_back(file.string() + ": " + compiled.error().message);
    return;
  }
  ++tally->compiled;
  tally->compile_ms.push_back(ms);
  const size_t first_mask = tally->mask_us.size();
  if (doc.contains("tests") && doc["tests"].is_array()) {
    feed_tests(file, doc["tests"], constraint.text, *compiled, *vocab, tally);
  }
  // Printed as each schema finishes, so that a slow one is named while the run goes on.
  if (progress) {
    const auto masks = std::span<const double>(tally->mask_us).subspan(first_mask);
    const double slowest = masks.empty() ? 0.0 : *std::max_element(masks.begin(), masks.end());
    std::fprintf(stderr, "%s: compiled in %.1f ms, slowest mask %.1f us\n", file.string().c_str(),
                 ms, slowest);
  }
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const size_t index = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

int bench_grammar(const BenchGrammarFlags& f) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& subset : fs::directory_iterator(f.schemas, ec)) {
    if (!subset.is_directory()) continue;
    for (const auto& entry : fs::directory_iterator(subset.path(), ec)) {
      if (entry.path().extension() == ".json") files.push_back(entry.path());
    }
  }
  if (ec || files.empty()) {
    return report(
        make_error(ErrorCode::kNotFound, "no <Subset>/<id>.json files under " + f.schemas));
  }
  std::sort(files.begin(), files.end());
  auto vocab = ConstraintVocabulary::load(f.vocab);
  if (!vocab.ok()) return report(vocab.error());

  const FormatPolicy formats =
      f.formats == "annotate" ? FormatPolicy::kAnnotate : FormatPolicy::kAssert;
  const int n_threads = std::max(1, f.threads);
  std::vector<Tally> tallies(static_cast<size_t>(n_threads));
  std::atomic<size_t> next{0};
  const auto work = [&](Tally* tally) {
    for (size_t i = next++; i < files.size(); i = next++)
      bench_schema(files[i], *vocab, formats, f.verbose, tally);
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < n_threads; ++t) workers.emplace_back(work, &tallies[static_cast<size_t>(t)]);
  work(&tallies[0]);
  for (std::thread& w : workers) w.join();

  Tally all;
  for (Tally& t : tallies) {
    all.schemas += t.schemas;
    all.compiled += t.compiled;
    all.valid += t.valid;
    all.valid_rejected += t.valid_rejected;
    all.invalid += t.invalid;
    all.invalid_accepted += t.invalid_accepted;
    all.tokens += t.tokens;
    all.compile_ms.insert(all.compile_ms.end(), t.compile_ms.begin(), t.compile_ms.end());
    all.mask_us.insert(all.mask_us.end(), t.mask_us.begin(), t.mask_us.end());
    all.notes.insert(all.notes.end(), t.notes.begin(), t.notes.end());
  }
  std::sort(all.mask_us.begin(), all.mask_us.end());
  std::sort(all.compile_ms.begin(), all.compile_ms.end());
  std::sort(all.notes.begin(), all.notes.end());
  const double compiled_share =
      all.schemas ? static_cast<double>(all.compiled) / static_cast<double>(all.schemas) : 0.0;
  if (f.verbose) {
    for (const std::string& note : all.notes) std::fprintf(stderr, "%s\n", note.c_str());
  }
  if (f.json) {
    const Json out = {{"schemas", all.schemas},
                      {"compiled", all.compiled},
                      {"compiled_share", compiled_share},
                      {"valid_instances", all.valid},
                      {"valid_rejected", all.valid_rejected},
                      {"invalid_instances", all.invalid},
                      {"invalid_accepted", all.invalid_accepted},
                      {"tokens", all.tokens},
                      {"mask_us_mean", mean(all.mask_us)},
                      {"mask_us_p50", percentile(all.mask_us, 0.50)},
                      {"mask_us_p99", percentile(all.mask_us, 0.99)},
                      {"mask_us_max", all.mask_us.empty() ? 0.0 : all.mask_us.back()},
                      {"compile_ms_mean", mean(all.compile_ms)},
                      {"compile_ms_p50", percentile(all.compile_ms, 0.50)},
                      {"compile_ms_p99", percentile(all.compile_ms, 0.99)},
                      {"compile_ms_max", all.compile_ms.empty() ? 0.0 : all.compile_ms.back()},
                      {"formats", f.formats},
                      {"vocab_size", (*vocab)->size()},
                      {"threads", n_threads}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("schemas            %zu, compiled %zu (%.1f%%)\n", all.schemas, all.compiled,
                100.0 * compiled_share);
    std::printf("compile            mean %.2f ms, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
                mean(all.compile_ms), percentile(all.compile_ms, 0.50),
                percentile(all.compile_ms, 0.99),
                all.compile_ms.empty() ? 0.0 : all.compile_ms.back());
    std::printf("valid instances    %zu, wrongly rejected %zu\n", all.valid, all.valid_rejected);
    std::printf("invalid instances  %zu, wrongly accepted %zu\n", all.invalid,
                all.invalid_accepted);
    std::printf(
        "mask per token     mean %.1f us, p50 %.1f us, p99 %.1f us, max %.1f us (%zu tokens, vocab "
        "%zu)\n",
        mean(all.mask_us), percentile(all.mask_us, 0.50), percentile(all.mask_us, 0.99),
        all.mask_us.empty() ? 0.0 : all.mask_us.back(), all.tokens, (*vocab)->size());
    std::printf("formats            %s\n", f.formats.c_str());
  }
  return kExitOk;
}

}  // namespace

Command add_bench_grammar_command(CLI::App& app) {
  auto f = std::make_shared<BenchGrammarFlags>();
  CLI::App* sub = app.add_subcommand(
      "bench-grammar", "measure JSON Schema compile and mask times on a JSONSchemaBench layout");
  sub->add_option("--schemas", f->schemas, "directory of <Subset>/<id>.json files")->required();
  sub->add_option("--vocab", f->vocab, "GGUF file whose vocabulary tokenizes the instances")
      ->required();
  sub->add_option("--threads", f->threads, "schemas measured in parallel")
      ->capture_default_str()
      ->check(thread_count_validator());
  sub->add_option("--formats", f->formats,
                  "JSON Schema `format`: assert (a date-time must be one, as ajv-formats) or "
                  "annotate (constrains nothing, as the 2020-12 default and the benchmark's "
                  "validators)")
      ->capture_default_str()
      ->check(CLI::IsMember({"assert", "annotate"}));
  sub->add_flag("--json", f->json, "print one JSON object");
  sub->add_flag("-v,--verbose", f->verbose,
                "print each schema's compile time as it goes, then the schemas that did not "
                "compile and the mismatches");
  return {sub, [f] { return bench_grammar(*f); }};
}

}  // namespace strata::cli
