// `strata eval --task`: accuracy of a model on the long-context tasks of bench/long_tasks.h over
// a grid of prompt lengths and needle depths, every prompt of the run decoded greedily through
// the engine's continuous batching. The report is a depth x length table of accuracy (text, JSON,
// or a PNG heatmap), and the prompts can be written as JSON lines for another engine to run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/long_tasks.h"
#include "strata/engine.h"
#include "strata/result.h"

namespace strata::bench {

struct TaskEvalOptions {
  EngineOptions engine;  // the model; its context is set from the longest case (at least)
  LongTask task = LongTask::kPasskey;
  std::vector<int> lengths;    // prompt tokens with BOS
  std::vector<double> depths;  // in [0, 1]
  uint64_t seed = 0;
  int samples = 1;            // cases per (length, depth) cell
  std::string haystack_path;  // multikey's text: its non-empty lines
  int parallel = 8;           // sequences decoded at once (EngineOptions::max_sequences)
  bool run = true;            // false: make (and write) the prompts only, load no weights
  std::string prompts_path;   // where to write the prompts (and answers) as JSON lines ("": none)
};

struct TaskCell {
  int length = 0;
  double depth = 0;
  int correct = 0, total = 0;
};

struct TaskEvalReport {
  std::string model_path;
  LongTask task = LongTask::kPasskey;
  uint64_t seed = 0;
  int samples = 0;
  std::vector<int> lengths;
  std::vector<double> depths;
  std::vector<TaskCell> cells;  // depth-major: depths[i], lengths[j] at i * lengths.size() + j
  int correct = 0, total = 0;
  bool ran = false;          // false with TaskEvalOptions::run off: no scores
  size_t prompt_tokens = 0;  // over every case
  double seconds = 0;        // the engine's run (prompts and decoding), without loading
  double accuracy() const { return total == 0 ? 0.0 : static_cast<double>(correct) / total; }
};

// Every case of the run, (length, depth, sample) in that nesting order.
Result<std::vector<TaskCase>> make_task_cases(const TaskEvalOptions& options,
                                              const TokenizeFn& tokenize);

// Makes the cases with the model file's tokenizer, writes them where asked, then (with run) loads
// the model and scores every case.
Result<TaskEvalReport> run_task_eval(const TaskEvalOptions& options);

// Whether the generated text, leading whitespace dropped, starts with the answer.
bool score_answer(std::string_view generated, std::string_view answer);

// One {"prompt", "answer", "length", "depth", "task", "sample"} object per line; with
// `generated` (one per case) also what strata wrote, up to where its score was settled, and
// "correct".
Status write_prompts_jsonl(const std::string& path, const std::vector<TaskCase>& cases,
                           const std::vector<std::string>& generated);

std::string format_task_table(const TaskEvalReport& report);
// {"task", "accuracy", "correct", "total", "model", "seed", "samples", "seconds",
//  "cells": [{"length", "depth", "correct", "total"}]}
std::string format_task_json(const TaskEvalReport& report);

}  // namespace strata::bench
