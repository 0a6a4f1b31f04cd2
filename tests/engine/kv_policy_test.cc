// The KV policy's parser (--kv-type, --kv-tiers) and its plan: arenas and tiers for a context,
// fallbacks for head sizes a format cannot hold, and the combinations refused.
#include "engine/kv_policy.h"

#include <gtest/gtest.h>

namespace strata::engine {
namespace {

TEST(KvPolicyTest, ParsesTierSpecs) {
  Result<KvTierPolicy> t = parse_kv_tiers("sink=4,hot=256,warm=q8_0:4096,cold=r4");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->sink, 4);
  EXPECT_EQ(t->hot, 256);
  EXPECT_EQ(t->warm, KvPrecision::kQ8_0);
  EXPECT_EQ(t->warm_tokens, 4096);
  EXPECT_EQ(t->cold, KvPrecision::kR4);
  EXPECT_EQ(kv_tiers_string(*t), "sink=4,hot=256,warm=q8_0:4096,cold=r4");
  EXPECT_EQ(kv_tiers_string(*parse_kv_tiers("cold=r3,hot=64")), "sink=0,hot=64,cold=r3");
  EXPECT_EQ(kv_tiers_string(*parse_kv_tiers("default")), kv_tiers_string(default_kv_tiers()));
  EXPECT_FALSE(parse_kv_tiers("none")->enabled());
}

TEST(KvPolicyTest, RefusesMalformedSpecsWithTheFix) {
  for (const char* bad : {"", "hot=256", "cold=q5", "sink=-1,cold=r4", "warm=q8_0,cold=r3",
                          "hot=1x,cold=r3", "cold", "cold=r3,cold=r4", "tepid=q8_0"}) {
    Result<KvTierPolicy> t = parse_kv_tiers(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(t.error().message.find("sink=N"), std::string::npos) << t.error().message;
  }
  EXPECT_FALSE(parse_kv_precision("q4_1").ok());
  EXPECT_EQ(*parse_kv_precision("bf16"), KvPrecision::kBF16);
}

KvPlanInput input(KvCachePolicy policy, size_t head_dim) {
  return {.policy = policy,
          .shape = {/*n_layers=*/2, /*n_kv_heads=*/2, head_dim, /*page_size=*/32},
          .context = 8192,
          .sequences = 2,
          .batch_tokens = 128};
}

TEST(KvPolicyTest, PlansAnArenaPerTierSizedForTheContext) {
  KvCachePolicy p;
  p.tiers = *parse_kv_tiers("sink=32,hot=256,warm=q8_0:1024,cold=r3");
  Result<KvPlan> plan = plan_kv_cache(input(p, 64));
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->arenas.size(), 3u);
  // Per sequence: hot 1 sink + 8 window + 4 + 2 in flight; warm 32 + 6; cold (8192 - 1280) / 32
  // + 1.
  EXPECT_EQ(plan->arenas[0].precision, kv::KvPrecision::kF16);
  EXPECT_EQ(plan->arenas[0].n_pages, 2u * 15);
  EXPECT_EQ(plan->arenas[1].precision, kv::KvPrecision::kQ8_0);
  EXPECT_EQ(plan->arenas[1].n_pages, 2u * 38);
  EXPECT_EQ(plan->arenas[2].precision, kv::KvPrecision::kR3);
  EXPECT_EQ(plan->arenas[2].n_pages, 2u * 217);
  EXPECT_EQ(plan->tiers.hot_tokens, 256u);
}

TEST(KvPolicyTest, SizesWindowPartsForTheWindowAndAStepPerSequence) {
  KvPlanInput in = input(KvCachePolicy{}, 64);
  in.shape.window_layers = {true, false};
  in.shape.window = 512;
  Result<KvPlan> plan = plan_kv_cache(in);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->arenas.size(), 1u);
  // Per sequence 256 pages; window parts for 16 pages of window, 4 of a step and 2 more.
  EXPECT_EQ(plan->arenas[0].n_pages, 2u * 256);
  EXPECT_EQ(plan->arenas[0].window_slots, 2u * 22);
  // Every tier's arena can hold them: a page may age inside the window.
  in.policy.tiers = *parse_kv_tiers("sink=32,hot=256,warm=q8_0:1024,cold=r3");
  plan = plan_kv_cache(in);
  ASSERT_TRUE(plan.ok());
  for (const kv::ArenaSpec& a : plan->arenas) EXPECT_EQ(a.window_slots, 2u * 22);
  // Without window layers the field is not set.
  EXPECT_EQ(plan_kv_cache(input(KvCachePolicy{}, 64))->arenas[0].window_slots,
            kv::ArenaSpec::kOnePerPage);
}

TEST(KvPolicyTest, ARotatedTypeAloneIsWrittenF16AndEncodedWhenFull) {
  KvCachePolicy p;
  p.hot = KvPrecision::kR4;
  Result<KvPlan> plan = plan_kv_cache(input(p, 128));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->arenas[0].precision, kv::KvPrecision::kF16);
  EXPECT_EQ(plan->tiers.cold, kv::KvPrecision::kR4);
  EXPECT_EQ(plan->tiers.hot_tokens, 0u);
}

TEST(KvPolicyTest, AHeadSizeAFormatCannotHoldFallsBackToF16) {
  KvCachePolicy p;
  p.hot = KvPrecision::kQ8_0;
  p.tiers = *parse_kv_tiers("hot=64,cold=r3");
  Result<KvPlan> plan = plan_kv_cache(input(p, 80));  // not a multiple of 32, not a power of 2
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->arenas[0].precision, kv::KvPrecision::kF16);
  EXPECT_EQ(plan->tiers.cold, kv::KvPrecision::kF16);
}

TEST(KvPolicyTest, HeadsBlockReadsCannotTakeKeepOnePrecision) {
  KvCachePolicy p;
  p.tiers = default_kv_tiers();
  Result<KvPlan> plan = plan_kv_cache(input(p, 4));
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->tiers.enabled());
  ASSERT_EQ(plan->arenas.size(), 1u);
  EXPECT_EQ(plan->arenas[0].precision, kv::KvPrecision::kF16);
}

TEST(KvPolicyTest, RefusesCombinationsThatCannotWork) {
  KvCachePolicy rotated_hot;
  rotated_hot.hot = KvPrecision::kR3;
  rotated_hot.tiers = default_kv_tiers();
  EXPECT_EQ(plan_kv_cache(input(rotated_hot, 64)).error().code, ErrorCode::kInvalidArgument);
  KvCachePolicy counted;
  counted.pages = 100;
  counted.tiers = default_kv_tiers();
  EXPECT_EQ(plan_kv_cache(input(counted, 64)).error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::engine
