// `strata bench` on stories260K: the figures are consistent with each other and the JSON carries
// the field names other tools read. Speeds are never asserted (the machine is shared and noisy).
#include "bench/bench.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/bandwidth.h"

namespace strata::bench {
namespace {

TEST(PercentileTest, InterpolatesBetweenOrderStatisticsLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], [0, 50, 90, 100]) = [1, 2.5, 3.7, 4]
  const std::vector<double> xs = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(percentile(xs, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(xs, 0.5), 2.5);
  EXPECT_NEAR(percentile(xs, 0.9), 3.7, 1e-12);
  EXPECT_DOUBLE_EQ(percentile(xs, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(percentile({7}, 0.99), 7.0);
  EXPECT_DOUBLE_EQ(percentile({}, 0.5), 0.0);
}

BenchOptions small_options() {
  BenchOptions o;
  o.engine.model_path = "../shared/models/stories260K.gguf";
  o.engine.threads = 1;
  o.prompt_tokens = 16;
  o.generate_tokens = 8;
  o.repetitions = 2;
  o.measure_bandwidth = false;  // its own test below
  return o;
}

TEST(BenchTest, ReportsEveryFigureOnARealModel) {
  BenchOptions o = small_options();
  o.ctx_depth = 40;
  o.concurrency = {1, 3};
  Result<BenchReport> r = run_bench(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GT(r->pp_tokens_per_s.mean, 0);
  EXPECT_GT(r->tg_tokens_per_s.mean, 0);
  EXPECT_GT(r->ttft_ms, 0);
  EXPECT_GT(r->itl_p50_ms, 0);
  EXPECT_GE(r->itl_p99_ms, r->itl_p50_ms);
  EXPECT_GT(r->peak_rss_bytes, r->weight_bytes);  // the process holds at least its weights
  EXPECT_EQ(r->weight_bytes, r->model.weight_bytes);
  ASSERT_EQ(r->concurrency.size(), 2u);
  EXPECT_EQ(r->concurrency[1].streams, 3);
  for (const ConcurrencyResult& c : r->concurrency) {
    EXPECT_GT(c.aggregate_tokens_per_s, 0);
    EXPECT_GE(c.ttft_p99_ms, c.ttft_p50_ms);
  }

  const nlohmann::json j = nlohmann::json::parse(format_json(*r));
  for (const char* key : {"pp_tokens_per_s", "tg_tokens_per_s", "ttft_ms", "itl_p50_ms",
                          "itl_p99_ms", "peak_rss_bytes", "weight_bytes"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_number()) << key;
  }
  // measure_bandwidth is off here: not measured, so null (its own test below has numbers).
  EXPECT_TRUE(j["read_bandwidth_gb_s"].is_null());
  EXPECT_TRUE(j["tg_bandwidth_fraction"].is_null());
  EXPECT_EQ(j["concurrency"].size(), 2u);
  const std::string table = format_table(*r);
  EXPECT_NE(table.find("pp16"), std::string::npos);
  EXPECT_NE(table.find("tg8 @ d40"), std::string::npos);
  EXPECT_NE(table.find("tg x3 streams"), std::string::npos);
}

TEST(BenchTest, ReadBandwidthIsMeasuredAndReported) {
  const double gb_s = measure_read_bandwidth(size_t{32} << 20, 2, 2);
  EXPECT_GT(gb_s, 0);
  EXPECT_TRUE(std::isfinite(gb_s));
  EXPECT_EQ(measure_read_bandwidth(0, 2), 0);
  BenchReport r;
  r.generate_tokens = 8;
  r.tg_bandwidth_gb_s = 3;
  r.read_bandwidth_gb_s = 12;
  r.threads = 2;
  EXPECT_NE(format_table(r).find("= 25% of the 12.0 GB/s"), std::string::npos) << format_table(r);
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(format_json(r))["tg_bandwidth_fraction"], 0.25);
}

// --json never reports a figure the run did not take as 0: it is null.
TEST(BenchTest, FiguresNotMeasuredAreNullInJson) {
  BenchReport r;
  r.prompt_tokens = 16;
  r.generate_tokens = 0;  // -n 0: prompt processing only
  r.repetitions = 1;
  r.pp_tokens_per_s.mean = 100;
  const nlohmann::json j = nlohmann::json::parse(format_json(r));
  EXPECT_EQ(j["pp_tokens_per_s"], 100);
  for (const char* key : {"pp_tokens_per_s_stddev", "tg_tokens_per_s", "tg_tokens_per_s_stddev",
                          "ttft_ms", "itl_p50_ms", "itl_p99_ms", "tg_bandwidth_gb_s",
                          "read_bandwidth_gb_s", "tg_bandwidth_fraction"}) {
    EXPECT_TRUE(j[key].is_null()) << key << " = " << j[key];
  }
  r.generate_tokens = 1;  // one token: a speed, but no gap between tokens
  r.repetitions = 3;
  const nlohmann::json k = nlohmann::json::parse(format_json(r));
  EXPECT_TRUE(k["tg_tokens_per_s"].is_number());
  EXPECT_TRUE(k["pp_tokens_per_s_stddev"].is_number());
  EXPECT_TRUE(k["itl_p50_ms"].is_null());
}

TEST(BenchTest, BadOptionsAreErrors) {
  BenchOptions o = small_options();
  o.repetitions = 0;
  EXPECT_FALSE(run_bench(o).ok());
  o = small_options();
  o.engine.context = 8;  // smaller than the 16-token prompt test
  Result<BenchReport> r = run_bench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("raise -c"), std::string::npos);
  o = small_options();
  o.engine.model_path = "/nonexistent.gguf";
  EXPECT_FALSE(run_bench(o).ok());
}

}  // namespace
}  // namespace strata::bench
