#include "record/statistics.h"

#include <gtest/gtest.h>

namespace trainprof::record {
namespace {

constexpr SourceLocation kFwd{"[Model].forward", "", 0, ActionKind::kForward};
constexpr SourceLocation kBatch{"run_training_batch", "", 0, ActionKind::kLoop};
constexpr SourceLocation kInner{"[Model].loss", "", 0, ActionKind::kOther};
constexpr SourceLocation kTop{"save_checkpoint", "", 0, ActionKind::kOther};

TEST(Summarize, PercentilesInterpolateLikeNumpy) {
  std::vector<int64_t> ns = {5, 1, 4, 2, 3};  // seconds * 1e9 below
  for (auto& v : ns) v *= 1'000'000'000;
  DurationSummary s = Summarize(ns);
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.total_s, 15);
  EXPECT_DOUBLE_EQ(s.mean_s, 3);
  EXPECT_DOUBLE_EQ(s.min_s, 1);
  EXPECT_DOUBLE_EQ(s.median_s, 3);
  EXPECT_DOUBLE_EQ(s.p95_s, 4.8);  // numpy.percentile([1,2,3,4,5], 95) == 4.8
  EXPECT_DOUBLE_EQ(s.max_s, 5);
}

TEST(Summarize, EvenCountMedianAndEmpty) {
  std::vector<int64_t> ns = {1000, 3000};
  EXPECT_DOUBLE_EQ(Summarize(ns).median_s, 2e-6);
  std::vector<int64_t> none;
  EXPECT_EQ(Summarize(none).count, 0);
}

TEST(CategoryOf, BracketPrefix) {
  EXPECT_EQ(CategoryOf("[_TrainingEpochLoop].train_dataloader_next"), "_TrainingEpochLoop");
  EXPECT_EQ(CategoryOf("backward"), "");
  EXPECT_EQ(CategoryOf("[unclosed"), "");
}

TEST(ComputeActionStats, GroupsByNameSortsByTotalAndKeepsDepth) {
  std::vector<TimedEvent> ev = {
      {&kBatch, 0, 100, 0},   {&kFwd, 10, 30, 1},  {&kInner, 45, 5, 2},
      {&kBatch, 100, 200, 0}, {&kFwd, 110, 50, 1}, {&kTop, 300, 1, 0},
  };
  auto stats = ComputeActionStats(ev);
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_EQ(stats[0].name, "run_training_batch");
  EXPECT_EQ(stats[0].time.count, 2);
  EXPECT_DOUBLE_EQ(stats[0].time.total_s, 300e-9);
  EXPECT_EQ(stats[1].name, "[Model].forward");
  EXPECT_EQ(stats[1].category, "Model");
  EXPECT_EQ(stats[1].min_depth, 1u);
  EXPECT_TRUE(InConciseSet(stats[1]));   // forward
  EXPECT_FALSE(InConciseSet(stats[2]));  // nested, kind other
  EXPECT_EQ(stats[2].name, "[Model].loss");
  EXPECT_TRUE(InConciseSet(stats[3]));  // top-level action
}

StepMark Mark(Stage st, int64_t idx, int64_t begin, int64_t end, int64_t bs = 10) {
  StepMark m;
  m.stage = st;
  m.index_in_stage = idx;
  m.begin_ns = begin;
  m.end_ns = end;
  m.batch_size = bs;
  return m;
}

TEST(ComputeSpeed, ThroughputAfterWarmupAndLoader) {
  const int64_t ms = 1'000'000;
  std::vector<StepMark> steps = {
      Mark(Stage::kTrain, 0, 0, 500 * ms),         // warm-up, left out
      Mark(Stage::kTrain, 1, 500 * ms, 600 * ms),  // 100 ms
      Mark(Stage::kTrain, 2, 600 * ms, 900 * ms),  // 300 ms
      Mark(Stage::kValidation, 0, 1000 * ms, 1050 * ms, 20),
  };
  const ActionKind kData = ActionKind::kDataLoader;
  std::vector<StepScope> scopes = {{kData, Stage::kTrain, 1, 10 * ms, 10},
                                   {kData, Stage::kTrain, 2, 30 * ms, 10},
                                   {ActionKind::kCommunication, Stage::kTrain, 2, 60 * ms, 10},
                                   {kData, Stage::kValidation, 3, 5 * ms, 20}};
  SpeedStats s = ComputeSpeed(steps, scopes, 1);
  EXPECT_EQ(s.train.steps, 3);
  EXPECT_EQ(s.train.measured_steps, 2);
  EXPECT_DOUBLE_EQ(s.train.batches_per_s, 2 / 0.4);
  EXPECT_DOUBLE_EQ(s.train.samples_per_s, 20 / 0.4);
  EXPECT_DOUBLE_EQ(s.train.mean_step_s, 0.2);
  EXPECT_DOUBLE_EQ(s.train.median_step_s, 0.2);
  EXPECT_DOUBLE_EQ(s.train.min_step_s, 0.1);
  EXPECT_DOUBLE_EQ(s.train.max_step_s, 0.3);
  // Waits and collectives of the measured steps over their 400 ms.
  EXPECT_DOUBLE_EQ(s.train.data_wait_s, 0.04);
  EXPECT_DOUBLE_EQ(s.train.data_wait_pct, 10);
  EXPECT_DOUBLE_EQ(s.train.communication_pct, 15);
  EXPECT_EQ(s.validation.measured_steps, 0);  // its only step is warm-up
  EXPECT_DOUBLE_EQ(s.train_loader.mean_fetch_s, 0.02);
  EXPECT_DOUBLE_EQ(s.train_loader.batches_per_s, 50);
  EXPECT_DOUBLE_EQ(s.train_loader.samples_per_s, 500);
  EXPECT_DOUBLE_EQ(s.validation_loader.samples_per_s, 20 / 0.005);
  ASSERT_EQ(s.training_rate.size(), 3u);
  EXPECT_DOUBLE_EQ(s.training_rate[1].batches_per_s, 10);
  EXPECT_DOUBLE_EQ(s.training_rate[2].t_s, 0.9);
  EXPECT_DOUBLE_EQ(s.training_rate[2].data_wait_s, 0.03);
  EXPECT_EQ(s.validation_rate.size(), 1u);
}

}  // namespace
}  // namespace trainprof::record
