#include "trainprof/schedule.h"

#include <gtest/gtest.h>

#include <string>

namespace trainprof {
namespace {

// One letter per step: N = NONE, W = WARMUP, R = RECORD, S = RECORD_AND_SAVE.
std::string Phases(const Schedule& s, int steps) {
  std::string out;
  for (int i = 0; i < steps; ++i) {
    switch (s.ActionAt(i)) {
      case ProfilerAction::kNone:
        out += 'N';
        break;
      case ProfilerAction::kWarmup:
        out += 'W';
        break;
      case ProfilerAction::kRecord:
        out += 'R';
        break;
      case ProfilerAction::kRecordAndSave:
        out += 'S';
        break;
    }
  }
  return out;
}

struct Case {
  const char* name;
  Schedule schedule;
  const char* expected;  // phases of steps 0..len-1
};

// Expected strings follow torch.profiler.schedule's schedule_fn step by step.
const Case kCases[] = {
    {"default_records_every_step", {0, 0, 0, 1, 0}, "SSSSSSSS"},
    {"tutorial_wait1_warmup1_active3_repeat1", {0, 1, 1, 3, 1}, "NWRRSNNNNN"},
    {"repeat2", {0, 1, 1, 2, 2}, "NWRSNWRSNNNN"},
    {"repeat0_cycles_forever", {0, 1, 1, 2, 0}, "NWRSNWRSNWRSNWRS"},
    {"skip_first", {3, 1, 1, 1, 1}, "NNNNWSNNN"},
    {"warmup0", {0, 2, 0, 2, 0}, "NNRSNNRS"},
    {"wait0_warmup0_active3", {0, 0, 0, 3, 2}, "RRSRRSNNN"},
    {"active1_is_save_each_cycle", {0, 1, 0, 1, 3}, "NSNSNSNN"},
    {"active_reached_at_last_step", {2, 1, 1, 1, 1}, "NNNWS"},
    {"skip_first_with_repeat0", {1, 0, 1, 1, 0}, "NWSWSWS"},
};

class ScheduleTest : public ::testing::TestWithParam<Case> {};

TEST_P(ScheduleTest, PhaseOfEachStep) {
  const Case& c = GetParam();
  ASSERT_TRUE(c.schedule.Validate().ok());
  EXPECT_EQ(Phases(c.schedule, static_cast<int>(std::string(c.expected).size())), c.expected);
}

INSTANTIATE_TEST_SUITE_P(TorchSemantics, ScheduleTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Schedule, RecordsStepIsRecordOrSave) {
  Schedule s{0, 1, 1, 2, 1};
  EXPECT_FALSE(s.RecordsStep(0));
  EXPECT_FALSE(s.RecordsStep(1));  // warmup: recorded into buffers, then discarded
  EXPECT_TRUE(s.RecordsStep(2));
  EXPECT_TRUE(s.RecordsStep(3));
  EXPECT_FALSE(s.RecordsStep(4));
  EXPECT_FALSE(s.RecordsStep(1000000));
}

TEST(Schedule, ValidateRejectsWhatTorchRejects) {
  EXPECT_FALSE((Schedule{0, 0, 0, 0, 0}).Validate().ok());
  EXPECT_FALSE((Schedule{-1, 0, 0, 1, 0}).Validate().ok());
  EXPECT_FALSE((Schedule{0, 0, -2, 1, 0}).Validate().ok());
  EXPECT_EQ((Schedule{0, 0, 0, 0, 0}).Validate().message(), "schedule.active must be >= 1, got 0");
}

TEST(Schedule, ActionNamesMatchTorch) {
  EXPECT_STREQ(ProfilerActionName(ProfilerAction::kRecordAndSave), "RECORD_AND_SAVE");
  EXPECT_STREQ(ProfilerActionName(ProfilerAction::kWarmup), "WARMUP");
}

}  // namespace
}  // namespace trainprof
