#include "bench/inspect.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/bench.h"
#include "bench/heatmap.h"

namespace strata::bench {
namespace {

Status read_prompts(const std::string& path, std::vector<std::string>& prompts) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot read " + path);
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("prompt") || !j["prompt"].is_string()) {
      return make_error(ErrorCode::kInvalidArgument,
                        path + " line " + std::to_string(number) +
                            ": expected a JSON object with a string \"prompt\" (as strata eval "
                            "--write-prompts writes)");
    }
    prompts.push_back(j["prompt"].get<std::string>());
  }
  return ok_status();
}

// Adds one prompt's profile into the sums of `into` (same layout).
void accumulate(std::vector<AttentionHeadProfile>& into, const AttentionProfile& p) {
  if (into.empty()) {
    into = p.heads;
    return;
  }
  for (size_t i = 0; i < into.size(); ++i) {
    AttentionHeadProfile& a = into[i];
    const AttentionHeadProfile& b = p.heads[i];
    a.queries += b.queries;
    a.entropy += b.entropy;
    a.sinks += b.sinks;
    a.window += b.window;
    a.selected += b.selected;
    a.rest += b.rest;
    a.recalls.insert(a.recalls.end(), b.recalls.begin(), b.recalls.end());
    a.best_recalls.insert(a.best_recalls.end(), b.best_recalls.begin(), b.best_recalls.end());
  }
}

std::string fixed(const char* format, double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

Result<InspectReport> run_inspect(const InspectOptions& o) {
  std::vector<std::string> prompts = o.prompts;
  if (!o.prompts_path.empty()) STRATA_RETURN_IF_ERROR(read_prompts(o.prompts_path, prompts));
  if (o.limit > 0 && prompts.size() > o.limit) prompts.resize(o.limit);
  if (prompts.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "no prompt to inspect: give -p TEXT, -f FILE or --prompts FILE.jsonl");
  }
  EngineOptions engine = o.engine;
  engine.kv.sparse.enabled = true;  // the pages keep key summaries; prompts are read dense
  engine.max_sequences = 1;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> model, Engine::create(engine));
  InspectReport r;
  r.model_path = engine.model_path;
  r.policy = engine.kv.sparse;
  r.n_layers = model->model().n_layers;
  r.n_heads = model->model().n_heads;
  for (const std::string& text : prompts) {
    const std::vector<TokenId> tokens = model->tokenize(text, true, false);
    STRATA_ASSIGN_OR_RETURN(AttentionProfile p, model->profile_attention(tokens, o.queries));
    accumulate(r.heads, p);
    r.positions += p.positions;
    ++r.prompts;
  }
  const double n = static_cast<double>(r.prompts);
  std::vector<double> recalls, best;
  for (AttentionHeadProfile& h : r.heads) {
    h.entropy /= n;
    h.sinks /= n;
    h.window /= n;
    h.selected /= n;
    h.rest /= n;
    if (h.dense_layer) continue;
    recalls.insert(recalls.end(), h.recalls.begin(), h.recalls.end());
    best.insert(best.end(), h.best_recalls.begin(), h.best_recalls.end());
  }
  r.recall_samples = recalls.size();
  if (!recalls.empty()) {
    r.recall_median = percentile(recalls, 0.5);
    r.recall_p10 = percentile(recalls, 0.1);
    r.recall_min = *std::min_element(recalls.begin(), recalls.end());
    r.recall_mean = mean_stddev(recalls).mean;
    r.best_recall_median = percentile(best, 0.5);
    r.best_recall_p10 = percentile(best, 0.1);
  }
  return r;
}

std::string format_inspect_table(const InspectReport& r) {
  std::string out = "model: " + r.model_path + "\nprompts: " + std::to_string(r.prompts) + " (" +
                    std::to_string(r.positions) + " tokens); sparse attention: budget " +
                    std::to_string(r.policy.budget) + ", " + std::to_string(r.policy.sinks) +
                    " sinks, window " + std::to_string(r.policy.window) + ", first " +
                    std::to_string(r.policy.dense_layers) + " layers dense\n\n";
  out +=
      "layer  head  entropy  sinks   window  selected  rest    recall p50  recall min  best p50\n";
  for (const AttentionHeadProfile& h : r.heads) {
    const double median = percentile(h.recalls, 0.5);
    const double lowest =
        h.recalls.empty() ? 0.0 : *std::min_element(h.recalls.begin(), h.recalls.end());
    out += fixed("%5.0f", static_cast<double>(h.layer)) + (h.dense_layer ? "d" : " ") +
           fixed("%5.0f", static_cast<double>(h.head)) + fixed("  %7.3f", h.entropy) +
           fixed("  %.4f", h.sinks) + fixed("  %.4f", h.window) + fixed("  %.4f  ", h.selected) +
           fixed("  %.4f", h.rest) + fixed("  %.4f    ", median) + fixed("  %.4f    ", lowest) +
           fixed("  %.4f", percentile(h.best_recalls, 0.5)) + "\n";
  }
  out += "(d: a dense layer, which reads every page; its columns say what selection would keep)\n";
  out += "\nrecall over " + std::to_string(r.recall_samples) +
         " (position, head) pairs of the selecting layers: median " +
         fixed("%.4f", r.recall_median) + ", p10 " + fixed("%.4f", r.recall_p10) + ", min " +
         fixed("%.4f", r.recall_min) + ", mean " + fixed("%.4f", r.recall_mean) + "\n";
  out += "the best choice of as many pages (the group's pages of most attention mass): median " +
         fixed("%.4f", r.best_recall_median) + ", p10 " + fixed("%.4f", r.best_recall_p10) + "\n";
  return out;
}

std::string format_inspect_json(const InspectReport& r) {
  nlohmann::ordered_json heads = nlohmann::ordered_json::array();
  for (const AttentionHeadProfile& h : r.heads) {
    heads.push_back({{"layer", h.layer},
                     {"head", h.head},
                     {"dense_layer", h.dense_layer},
                     {"queries", h.queries},
                     {"entropy", h.entropy},
                     {"sinks", h.sinks},
                     {"window", h.window},
                     {"selected", h.selected},
                     {"rest", h.rest},
                     {"recall_median", percentile(h.recalls, 0.5)},
                     {"best_recall_median", percentile(h.best_recalls, 0.5)}});
  }
  nlohmann::ordered_json j = {{"model", r.model_path},
                              {"prompts", r.prompts},
                              {"positions", r.positions},
                              {"attn_budget", r.policy.budget},
                              {"attn_window", r.policy.window},
                              {"attn_sinks", r.policy.sinks},
                              {"attn_dense_layers", r.policy.dense_layers},
                              {"recall_median", r.recall_median},
                              {"recall_p10", r.recall_p10},
                              {"recall_min", r.recall_min},
                              {"recall_mean", r.recall_mean},
                              {"recall_samples", r.recall_samples},
                              {"best_recall_median", r.best_recall_median},
                              {"best_recall_p10", r.best_recall_p10},
                              {"heads", heads}};
  return j.dump();
}

Status write_inspect_png(const std::string& path, const InspectReport& r) {
  Grid g;
  g.title = "selection recall, budget " + std::to_string(r.policy.budget) + ": median " +
            fixed("%.3f", r.recall_median);
  g.row_label = "layer";
  g.col_label = "head";
  for (size_t layer = 0; layer < r.n_layers; ++layer) {
    g.row_names.push_back(std::to_string(layer) +
                          (r.heads[layer * r.n_heads].dense_layer ? " d" : ""));
  }
  for (size_t h = 0; h < r.n_heads; ++h) g.col_names.push_back(std::to_string(h));
  for (const AttentionHeadProfile& h : r.heads) g.values.push_back(1.0 - h.rest);
  return write_png(path, render_grid(g));
}

}  // namespace strata::bench
