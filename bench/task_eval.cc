#include "bench/task_eval.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "strata/tokenizer.h"

namespace strata::bench {
namespace {

Status check_options(const TaskEvalOptions& o) {
  auto bad = [](const std::string& message) {
    return make_error(ErrorCode::kInvalidArgument, message);
  };
  if (o.lengths.empty()) return bad("--lengths names no length");
  if (o.depths.empty()) return bad("--depths names no depth");
  for (int length : o.lengths) {
    if (length < 1) return bad("a length must be positive, got " + std::to_string(length));
  }
  for (double d : o.depths) {
    if (!(d >= 0 && d <= 1)) return bad("a depth must lie in [0, 1], got " + std::to_string(d));
  }
  if (o.samples < 1) return bad("--samples must be at least 1");
  if (o.parallel < 1) return bad("--parallel must be at least 1");
  if (o.task == LongTask::kMultikey && o.haystack_path.empty()) {
    return bad(
        "--task multikey hides its needles in lines of real text: pass --haystack FILE, a text "
        "file whose non-empty lines are the haystack (e.g. models/testbed/validation.txt)");
  }
  return ok_status();
}

// One case's decoding: the text of its answer_tokens + 4 greedy tokens.
struct Decoding {
  std::string text;
  FinishReason finish = FinishReason::kNone;
  std::string error;
};

// Submits every case, then steps the engine until all are done. Every case decodes all its
// tokens, even once its score is settled: the text is what another engine's answer is compared
// with (the prefill dominates the time anyway).
Status decode_all(Engine& engine, const std::vector<TaskCase>& cases, std::vector<Decoding>& out) {
  out.assign(cases.size(), {});
  for (size_t i = 0; i < cases.size(); ++i) {
    GenerationRequest request;
    request.prompt = engine.tokenize(cases[i].prompt, true, false);
    request.max_tokens = cases[i].answer_tokens + 4;
    request.sampling.temperature = 0;
    Decoding& d = out[i];
    auto on_token = [&d](const TokenEvent& e) {
      if (e.finish != FinishReason::kNone) d.finish = e.finish;
      if (e.finish == FinishReason::kError) d.error = e.error;
      d.text += e.text;
      return true;
    };
    STRATA_ASSIGN_OR_RETURN(uint64_t id, engine.submit(request, on_token));
    (void)id;
  }
  while (engine.has_work()) STRATA_RETURN_IF_ERROR(engine.step());
  for (const Decoding& d : out) {
    if (d.finish == FinishReason::kError) return make_error(ErrorCode::kInternal, d.error);
  }
  return ok_status();
}

TaskEvalReport empty_report(const TaskEvalOptions& o) {
  TaskEvalReport r;
  r.model_path = o.engine.model_path;
  r.task = o.task;
  r.seed = o.seed;
  r.samples = o.samples;
  r.lengths = o.lengths;
  r.depths = o.depths;
  for (double depth : o.depths) {
    for (int length : o.lengths) r.cells.push_back({length, depth, 0, 0});
  }
  return r;
}

// The cell of a case: cases come length-major, cells depth-major.
size_t cell_of(const TaskEvalReport& r, size_t case_index) {
  const size_t per_length = r.depths.size() * static_cast<size_t>(r.samples);
  const size_t j = case_index / per_length;
  const size_t i = case_index % per_length / static_cast<size_t>(r.samples);
  return i * r.lengths.size() + j;
}

std::string printf_string(const char* format, auto... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, format, args...);
  return buffer;
}

}  // namespace

bool score_answer(std::string_view generated, std::string_view answer) {
  size_t start = 0;
  while (start < generated.size() && std::isspace(static_cast<unsigned char>(generated[start]))) {
    ++start;
  }
  return generated.substr(start).starts_with(answer);
}

Result<std::vector<TaskCase>> make_task_cases(const TaskEvalOptions& o,
                                              const TokenizeFn& tokenize) {
  STRATA_RETURN_IF_ERROR(check_options(o));
  std::vector<std::string> haystack;
  if (o.task == LongTask::kMultikey) {
    STRATA_ASSIGN_OR_RETURN(haystack, read_haystack(o.haystack_path));
  }
  PieceCounter counter(tokenize);
  std::vector<TaskCase> cases;
  for (int length : o.lengths) {
    for (double depth : o.depths) {
      for (int sample = 0; sample < o.samples; ++sample) {
        const CaseSpec spec{o.task, o.seed, length, depth, sample};
        STRATA_ASSIGN_OR_RETURN(TaskCase c, make_task_case(spec, counter, &haystack));
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

Result<TaskEvalReport> run_task_eval(const TaskEvalOptions& o) {
  STRATA_RETURN_IF_ERROR(check_options(o));
  // The prompts need only the vocabulary: with run off, no weights are read at all.
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<TextTokenizer> tokenizer,
                          TextTokenizer::load(o.engine.model_path));
  const TextTokenizer& tk = *tokenizer;
  STRATA_ASSIGN_OR_RETURN(const std::vector<TaskCase> cases,
                          make_task_cases(o, [&tk](std::string_view text, bool add_special) {
                            return tk.tokenize(text, add_special, false);
                          }));
  // Without a run the prompts are written now; with one, after it, with what strata answered.
  if (!o.run && !o.prompts_path.empty()) {
    STRATA_RETURN_IF_ERROR(write_prompts_jsonl(o.prompts_path, cases, {}));
  }
  TaskEvalReport r = empty_report(o);
  for (size_t k = 0; k < cases.size(); ++k) {
    ++r.cells[cell_of(r, k)].total;
    r.prompt_tokens += static_cast<size_t>(cases[k].tokens);
  }
  r.total = static_cast<int>(cases.size());
  if (!o.run) return r;

  // Each sequence's context: its prompt and the tokens it may generate.
  EngineOptions eo = o.engine;
  int context = 0;
  for (const TaskCase& c : cases) context = std::max(context, c.tokens + c.answer_tokens + 4);
  if (eo.context != 0 && eo.context < context) {
    return make_error(ErrorCode::kInvalidArgument,
                      "-c " + std::to_string(eo.context) + " is shorter than the longest case (" +
                          std::to_string(context) + " tokens with its answer)");
  }
  eo.context = std::max(eo.context, context);
  eo.max_sequences = std::min(o.parallel, static_cast<int>(cases.size()));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(eo));
  const auto start = std::chrono::steady_clock::now();
  std::vector<Decoding> decoded;
  STRATA_RETURN_IF_ERROR(decode_all(*engine, cases, decoded));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t k = 0; k < cases.size(); ++k) {
    const bool correct = score_answer(decoded[k].text, cases[k].answer);
    r.cells[cell_of(r, k)].correct += correct;
    r.correct += correct;
  }
  r.ran = true;
  if (!o.prompts_path.empty()) {
    std::vector<std::string> generated;
    for (const Decoding& d : decoded) generated.push_back(d.text);
    STRATA_RETURN_IF_ERROR(write_prompts_jsonl(o.prompts_path, cases, generated));
  }
  return r;
}

Status write_prompts_jsonl(const std::string& path, const std::vector<TaskCase>& cases,
                           const std::vector<std::string>& generated) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return make_error(ErrorCode::kInvalidArgument, "cannot write " + path);
  for (size_t k = 0; k < cases.size(); ++k) {
    const TaskCase& c = cases[k];
    nlohmann::json j = {{"prompt", c.prompt},
                        {"answer", c.answer},
                        {"length", c.length},
                        {"depth", c.depth},
                        {"task", long_task_name(c.task)},
                        {"sample", c.sample}};
    if (k < generated.size()) {
      j["generated"] = generated[k];
      j["correct"] = score_answer(generated[k], c.answer);
    }
    out << j.dump() << '\n';
  }
  out.flush();
  if (!out) return make_error(ErrorCode::kInternal, "writing " + path + " failed");
  return ok_status();
}

std::string format_task_table(const TaskEvalReport& r) {
  std::ostringstream out;
  out << long_task_name(r.task) << (r.ran ? " accuracy" : " cases")
      << " by depth (rows) and length in tokens (columns), " << r.samples
      << " sample(s) per cell, seed " << r.seed << "\n";
  out << "depth ";
  for (int length : r.lengths) out << printf_string(" %7d", length);
  out << "\n";
  for (size_t i = 0; i < r.depths.size(); ++i) {
    out << printf_string("%5.2f ", r.depths[i]);
    for (size_t j = 0; j < r.lengths.size(); ++j) {
      const TaskCell& c = r.cells[i * r.lengths.size() + j];
      if (!r.ran) {
        out << printf_string(" %7d", c.total);
      } else {
        out << printf_string(" %7.2f", c.total == 0 ? 0.0 : double(c.correct) / c.total);
      }
    }
    out << "\n";
  }
  if (r.ran) {
    out << printf_string("overall accuracy %.3f (%d/%d), %zu prompt tokens in %.2f s\n",
                         r.accuracy(), r.correct, r.total, r.prompt_tokens, r.seconds);
  } else {
    out << printf_string("%d cases, %zu prompt tokens (not run)\n", r.total, r.prompt_tokens);
  }
  return out.str();
}

std::string format_task_json(const TaskEvalReport& r) {
  nlohmann::json cells = nlohmann::json::array();
  for (const TaskCell& c : r.cells) {
    cells.push_back(
        {{"length", c.length}, {"depth", c.depth}, {"correct", c.correct}, {"total", c.total}});
  }
  nlohmann::json j = {{"task", long_task_name(r.task)},
                      {"accuracy", r.accuracy()},
                      {"correct", r.correct},
                      {"total", r.total},
                      {"ran", r.ran},
                      {"model", r.model_path},
                      {"seed", r.seed},
                      {"samples", r.samples},
                      {"prompt_tokens", r.prompt_tokens},
                      {"seconds", r.seconds},
                      {"cells", cells}};
  return j.dump();
}

}  // namespace strata::bench
