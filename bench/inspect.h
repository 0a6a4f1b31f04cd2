// `strata inspect`: where attention goes on real prompts and how much of it sparse attention's
// page selection keeps (Engine::profile_attention), averaged over prompts per layer and head,
// with the distribution of the selection's recall over every profiled position of the layers
// that select (the dense layers read everything).
#pragma once

#include <string>
#include <vector>

#include "strata/engine.h"
#include "strata/result.h"

namespace strata::bench {

struct InspectOptions {
  EngineOptions engine;  // its kv.sparse is the selection judged (run_inspect enables it)
  std::vector<std::string> prompts;  // texts; BOS is added as the model asks
  std::string prompts_path;          // more: JSON lines with "prompt" (strata eval --write-prompts)
  size_t limit = 0;                  // at most this many prompts (0: all)
  size_t queries = 16;               // the last positions of each prompt profiled
};

struct InspectReport {
  std::string model_path;
  SparseAttentionPolicy policy;
  size_t n_layers = 0, n_heads = 0, prompts = 0, positions = 0;  // tokens over all prompts
  std::vector<AttentionHeadProfile> heads;  // [layer][head], means over the prompts
  // Recall over every profiled (prompt, position, head) of the selecting layers.
  double recall_median = 0, recall_p10 = 0, recall_min = 0, recall_mean = 0;
  size_t recall_samples = 0;
  // The same for the best possible choice of as many pages (AttentionHeadProfile::best_recalls).
  double best_recall_median = 0, best_recall_p10 = 0;
};

Result<InspectReport> run_inspect(const InspectOptions& options);

std::string format_inspect_table(const InspectReport& report);
std::string format_inspect_json(const InspectReport& report);
// Recall per layer (rows) and head (columns) as a PNG heatmap.
Status write_inspect_png(const std::string& path, const InspectReport& report);

}  // namespace strata::bench
