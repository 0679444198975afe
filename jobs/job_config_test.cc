#include "jobs/job_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "record/options_schema.h"

namespace trainprof::jobs {
namespace {

TEST(JobConfig, EmbeddedDefaultsApply) {
  JobConfig cfg;
  base::ConfigSchema schema;
  AddJobKeys(schema, cfg);
  ASSERT_TRUE(ApplyDefaultConfig(schema).ok());
  EXPECT_EQ(cfg.training.epochs, 2);
  EXPECT_EQ(cfg.training.limit_train_batches, 300);
  EXPECT_EQ(cfg.profiler.output.name, "fashion-mnist");
  EXPECT_TRUE(cfg.profiler.time.enabled);
  EXPECT_FALSE(cfg.profiler.time.verbose);
  EXPECT_TRUE(ValidateOptions(cfg.profiler).ok());
}

TEST(JobConfig, FlagsOverrideTheFile) {
  JobConfig cfg;
  base::ConfigSchema schema;
  AddJobKeys(schema, cfg);
  ASSERT_TRUE(ApplyDefaultConfig(schema).ok());
  ASSERT_TRUE(schema.ApplyYamlText("training:\n  epochs: 5\n", "f.yaml").ok());
  ASSERT_TRUE(schema.ApplyOverride("training.epochs=1").ok());
  EXPECT_EQ(cfg.training.epochs, 1);
  Status bad = schema.ApplyOverride("data.format=parquet");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.message(),
      "--set data.format=parquet: data.format: 'parquet' is not one of: idx, png_dir, packed");
}

// docs/config.md must describe every key the job accepts.
TEST(JobConfig, EveryKeyIsDocumented) {
  JobConfig cfg;
  base::ConfigSchema schema;
  AddJobKeys(schema, cfg);
  std::ifstream in(std::string(TRAINPROF_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (const base::ConfigKey& k : schema.Keys()) {
    EXPECT_NE(doc.find("`" + k.key + "`"), std::string::npos)
        << k.key << " is not in docs/config.md";
  }
}

}  // namespace
}  // namespace trainprof::jobs
