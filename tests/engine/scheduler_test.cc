// The scheduler against a small KV pool: admission, decode-first order, preemption of the most
// recently admitted sequence when pages run short (recompute later), and failure only for a
// sequence that cannot fit the pool alone.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::engine {
namespace {

// 6 pages of 4 positions.
kv::KvManager small_kv() {
  const kv::KvShape shape{/*n_layers=*/1, /*n_kv_heads=*/1, /*head_dim=*/4, /*page_size=*/4};
  const kv::ArenaSpec arena{kv::KvPrecision::kF32, 6};
  return kv::KvManager(shape, std::span<const kv::ArenaSpec>(&arena, 1));
}

Sequence make_sequence(uint64_t id, size_t n_prompt) {
  Sequence s;
  s.id = id;
  s.tokens.assign(n_prompt, 1);
  s.n_prompt = n_prompt;
  s.max_length = 100;
  return s;
}

// What the engine does after a step: the scheduled tokens are computed and each sequence that
// wanted logits gets one more token.
void run(const SchedulerOutput& plan) {
  for (const ScheduledSeq& c : plan.scheduled) {
    c.seq->n_computed += c.n_tokens;
    if (c.n_logits > 0) {
      c.seq->tokens.push_back(2);
      c.seq->status = SeqStatus::kDecoding;
    }
  }
}

TEST(SchedulerTest, PreemptsTheMostRecentlyAdmittedWhenPagesRunShort) {
  kv::KvManager kv = small_kv();
  Scheduler scheduler(kv, /*max_running=*/3, /*token_budget=*/100);
  Sequence a = make_sequence(1, 8), b = make_sequence(2, 8), c = make_sequence(3, 8);
  scheduler.add(&a);
  scheduler.add(&b);
  scheduler.add(&c);
  SchedulerOutput first = scheduler.schedule();
  ASSERT_EQ(first.scheduled.size(), 3u);  // 2 pages each: the pool is full
  EXPECT_EQ(first.admitted.size(), 3u);
  EXPECT_EQ(kv.used_pages(), 6u);
  run(first);

  // Position 8 needs a third page for a and b: c, admitted last, gives its pages back.
  SchedulerOutput second = scheduler.schedule();
  ASSERT_EQ(second.preempted.size(), 1u);
  EXPECT_EQ(second.preempted[0], &c);
  EXPECT_TRUE(second.failed.empty());
  ASSERT_EQ(second.scheduled.size(), 2u);
  EXPECT_EQ(second.scheduled[0].seq, &a);
  EXPECT_EQ(second.scheduled[1].seq, &b);
  EXPECT_EQ(c.status, SeqStatus::kPreempted);
  EXPECT_EQ(c.n_computed, 0u);
  EXPECT_EQ(kv.length(3), 0u);
  EXPECT_EQ(scheduler.n_running(), 2u);
  EXPECT_EQ(scheduler.n_waiting(), 1u);
  run(second);

  // Once a finishes, c is admitted again and recomputes all its tokens (prompt and generated).
  scheduler.remove(&a);
  SchedulerOutput third = scheduler.schedule();
  ASSERT_EQ(third.scheduled.size(), 2u);
  EXPECT_EQ(third.scheduled[1].seq, &c);
  EXPECT_EQ(third.scheduled[1].n_tokens, 9u);
  EXPECT_EQ(third.scheduled[1].n_logits, 1u);
  ASSERT_EQ(third.admitted.size(), 1u);
  EXPECT_EQ(third.admitted[0], &c);
}

TEST(SchedulerTest, ASequenceShortOfPagesWaitsWhileOthersHoldThem) {
  kv::KvManager kv = small_kv();
  Scheduler scheduler(kv, /*max_running=*/4, /*token_budget=*/100);
  Sequence a = make_sequence(1, 20), b = make_sequence(2, 8);
  scheduler.add(&a);
  scheduler.add(&b);
  SchedulerOutput first = scheduler.schedule();
  ASSERT_EQ(first.scheduled.size(), 1u);  // a takes 5 pages; b needs 2 and waits
  EXPECT_TRUE(first.failed.empty());
  EXPECT_EQ(b.status, SeqStatus::kWaiting);
  EXPECT_EQ(scheduler.n_waiting(), 1u);
  scheduler.remove(&a);
  SchedulerOutput second = scheduler.schedule();
  ASSERT_EQ(second.scheduled.size(), 1u);
  EXPECT_EQ(second.scheduled[0].seq, &b);
}

TEST(SchedulerTest, OnlyASequenceThatCannotFitAloneFails) {
  kv::KvManager kv = small_kv();
  Scheduler scheduler(kv, /*max_running=*/2, /*token_budget=*/100);
  Sequence big = make_sequence(1, 30);  // 8 pages > 6
  scheduler.add(&big);
  SchedulerOutput plan = scheduler.schedule();
  EXPECT_TRUE(plan.scheduled.empty());
  ASSERT_EQ(plan.failed.size(), 1u);
  EXPECT_EQ(plan.failed[0], &big);
  EXPECT_EQ(kv.used_pages(), 0u);

  // Growing past the pool alone, while running, fails too; it never preempts itself forever.
  Sequence grower = make_sequence(2, 23);
  scheduler.add(&grower);
  SchedulerOutput admitted = scheduler.schedule();
  ASSERT_EQ(admitted.scheduled.size(), 1u);
  run(admitted);
  SchedulerOutput next = scheduler.schedule();  // position 23 fits the sixth page
  ASSERT_EQ(next.scheduled.size(), 1u);
  run(next);
  SchedulerOutput past = scheduler.schedule();  // position 24 needs a seventh
  EXPECT_TRUE(past.scheduled.empty());
  ASSERT_EQ(past.failed.size(), 1u);
  EXPECT_EQ(past.failed[0], &grower);
}

TEST(SchedulerTest, DecodeTokensComeBeforePromptChunksWithinTheBudget) {
  kv::KvManager kv = small_kv();
  Scheduler scheduler(kv, /*max_running=*/3, /*token_budget=*/6);
  Sequence a = make_sequence(1, 3), b = make_sequence(2, 10);
  scheduler.add(&a);
  scheduler.add(&b);
  SchedulerOutput first = scheduler.schedule();
  ASSERT_EQ(first.scheduled.size(), 2u);
  EXPECT_EQ(first.scheduled[1].n_tokens, 3u);  // what the budget leaves of b's prompt
  EXPECT_EQ(first.scheduled[1].n_logits, 0u);  // mid-prompt: no logits
  run(first);
  SchedulerOutput second = scheduler.schedule();
  ASSERT_EQ(second.scheduled.size(), 2u);
  EXPECT_EQ(second.scheduled[0].seq, &a);  // decode first
  EXPECT_EQ(second.scheduled[0].n_tokens, 1u);
  EXPECT_EQ(second.scheduled[1].n_tokens, 5u);
}

}  // namespace
}  // namespace strata::engine
