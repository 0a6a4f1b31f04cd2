// strata run: stream a continuation of a prompt (from -p, -f FILE, or stdin with `-p -` or a
// pipe).
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

#include "cli/commands.h"
#include "cli/common.h"

namespace strata::cli {
namespace {

struct RunFlags {
  EngineOptions engine;
  std::optional<std::string> prompt;  // "-": read stdin
  std::string prompt_file;
  bool escape = false;  // process \n, \t, ... in the prompt (llama.cpp's -e)
  bool conversation = false;
  int n_predict = 128;
  SamplingOptions sampling;
  std::optional<uint64_t> seed;
  bool ids = false;
  bool ignore_eos = false;
  std::string grammar_file;      // GBNF
  std::string json_schema_file;  // JSON Schema
  bool json = false;             // any JSON object
};

// llama.cpp's -e: \n \r \t \' \" \\ and \xHH; any other backslash stays as it is.
std::string process_escapes(const std::string& in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\' || i + 1 == in.size()) {
      out += in[i];
      continue;
    }
    const char c = in[++i];
    auto hex = [&](size_t k) {
      return k < in.size() && std::isxdigit(static_cast<unsigned char>(in[k]));
    };
    if (c == 'n') {
      out += '\n';
    } else if (c == 'r') {
      out += '\r';
    } else if (c == 't') {
      out += '\t';
    } else if (c == '\'' || c == '"' || c == '\\') {
      out += c;
    } else if (c == 'x' && hex(i + 1) && hex(i + 2)) {
      out += static_cast<char>(std::stoi(in.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += '\\';
      out += c;
    }
  }
  return out;
}

// One trailing newline dropped, as llama.cpp reads -f.
std::string drop_trailing_newline(std::string s) {
  if (!s.empty() && s.back() == '\n') {
    s.pop_back();
    if (!s.empty() && s.back() == '\r') s.pop_back();
  }
  return s;
}

// The prompt from -p TEXT, -f FILE, `-p -` or a pipe on stdin; an error when there is none (an
// empty file or stdin is an error too: never a silent generation from nothing).
Result<std::string> resolve_prompt(const RunFlags& f) {
  std::string text;
  if (!f.prompt_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(text, read_file(f.prompt_file));
    text = drop_trailing_newline(std::move(text));
    if (text.empty()) return make_error(ErrorCode::kInvalidArgument, f.prompt_file + " is empty");
  } else if (f.prompt == "-" || (!f.prompt && !::isatty(STDIN_FILENO))) {
    std::ostringstream in;
    in << std::cin.rdbuf();
    text = drop_trailing_newline(in.str());
    if (text.empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "no prompt: stdin is empty (give -p TEXT or -f FILE)");
    }
  } else if (f.prompt) {
    text = *f.prompt;
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "no prompt: give -p TEXT, -f FILE, or pipe it on stdin");
  }
  return f.escape ? process_escapes(text) : text;
}

// --grammar / --json-schema / --json as the request's output constraint.
Result<OutputConstraint> constraint_from_flags(const RunFlags& f) {
  OutputConstraint c;
  if (!f.grammar_file.empty()) {
    c.kind = ConstraintKind::kGrammar;
    STRATA_ASSIGN_OR_RETURN(c.text, read_file(f.grammar_file));
  } else if (!f.json_schema_file.empty()) {
    c.kind = ConstraintKind::kJsonSchema;
    STRATA_ASSIGN_OR_RETURN(c.text, read_file(f.json_schema_file));
  } else if (f.json) {
    c.kind = ConstraintKind::kJsonObject;
  }
  return c;
}

int run(const RunFlags& f) {
  if (f.conversation) {
    std::fprintf(stderr,
                 "warning: --conversation is ignored: strata run answers once; use strata chat "
                 "for a conversation\n");
  }
  Result<std::string> prompt = resolve_prompt(f);
  if (!prompt.ok()) return report(prompt.error());
  int code = kExitOk;
  std::unique_ptr<Engine> engine = load_engine(f.engine, code);
  if (!engine) return code;

  GenerationRequest request;
  Result<OutputConstraint> constraint = constraint_from_flags(f);
  if (!constraint.ok()) return report(constraint.error());
  request.constraint = std::move(constraint).value();
  request.prompt = engine->tokenize(*prompt, /*add_special=*/true, /*parse_special=*/true);
  request.max_tokens = max_tokens_for(f.n_predict, *engine);
  request.sampling = f.sampling;
  request.sampling.seed = f.seed.value_or(std::random_device{}());
  request.ignore_eos = f.ignore_eos;
  if (!f.seed && f.sampling.temperature > 0)
    std::fprintf(stderr, "seed: %llu\n", static_cast<unsigned long long>(request.sampling.seed));

  bool first = true;
  Result<GenerationStats> stats = engine->generate(request, [&](const TokenEvent& e) {
    if (f.ids) {
      if (e.token >= 0) std::printf(first ? "%d" : " %d", e.token);
      first = false;
    } else {
      std::fwrite(e.text.data(), 1, e.text.size(), stdout);
    }
    std::fflush(stdout);
    return true;
  });
  std::printf("\n");
  std::fflush(stdout);  // the timing line on stderr comes after the text
  if (!stats.ok()) return report(stats.error());
  const GenerationStats& s = *stats;
  // The request was accepted but could not finish (e.g. the forward pass failed): as bad as a
  // refused one, so no timing line and no exit 0.
  if (s.finish == FinishReason::kError) {
    return report(make_error(
        ErrorCode::kInternal,
        "generation failed after " + std::to_string(s.generated_tokens) + " tokens: " + s.error));
  }
  std::fprintf(
      stderr,
      "prompt: %zu tokens, %.1f tokens/s | generation: %zu tokens, %.1f tokens/s | finish: %s\n",
      s.prompt_tokens, s.prompt_tokens / std::max(s.prompt_seconds, 1e-9), s.generated_tokens,
      s.generated_tokens > 1 ? (s.generated_tokens - 1) / std::max(s.generate_seconds, 1e-9) : 0.0,
      finish_reason_name(s.finish));
  const EngineLoad load = engine->load();
  if (load.spec_drafts > 0) {
    std::fprintf(stderr, "speculation: %llu of %llu guesses accepted (%.0f%%) in %llu drafts\n",
                 static_cast<unsigned long long>(load.spec_accepted_tokens),
                 static_cast<unsigned long long>(load.spec_draft_tokens),
                 100.0 * static_cast<double>(load.spec_accepted_tokens) /
                     static_cast<double>(load.spec_draft_tokens),
                 static_cast<unsigned long long>(load.spec_drafts));
  }
  return kExitOk;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub =
      app.add_subcommand("run", "generate a continuation of a prompt, streamed to stdout");
  add_model_flags(*sub, f->engine);
  add_speculative_flags(*sub, f->engine.speculative);
  CLI::Option* prompt =
      sub->add_option("-p,--prompt", f->prompt,
                      "prompt text ('-': read stdin; without -p or -f a piped stdin is read)");
  sub->add_option("-f,--file", f->prompt_file,
                  "read the prompt from a file (one trailing newline is dropped)")
      ->excludes(prompt);
  sub->add_flag("-e,--escape", f->escape,
                "process \\n, \\r, \\t, \\', \\\", \\\\ and \\xHH in the prompt");
  sub->add_flag("!--no-escape", f->escape, "take the prompt as it is (the default)");
  sub->add_flag("--conversation", f->conversation, "llama.cpp's -cnv: ignored, see strata chat");
  add_n_predict_option(*sub, f->n_predict, "tokens to generate at most");
  add_sampling_flags(*sub, f->sampling);
  sub->add_option("--seed", f->seed, "sampling seed (default: random, printed on stderr)");
  sub->add_flag("--ids", f->ids, "print the generated token ids instead of text");
  sub->add_flag("--ignore-eos", f->ignore_eos, "keep generating past end-of-generation tokens");
  CLI::Option* grammar =
      sub->add_option("--grammar", f->grammar_file, "constrain the output to a GBNF grammar file")
          ->check(CLI::ExistingFile);
  CLI::Option* schema = sub->add_option("--json-schema", f->json_schema_file,
                                        "constrain the output to JSON valid under a schema file")
                            ->check(CLI::ExistingFile);
  CLI::Option* json = sub->add_flag("--json", f->json, "constrain the output to a JSON object");
  grammar->excludes(schema)->excludes(json);
  schema->excludes(json);
  return {sub, [f] { return run(*f); }};
}

}  // namespace strata::cli
