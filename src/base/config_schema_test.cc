#include "base/config_schema.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/text.h"
#include "util/golden.h"

namespace trainprof::base {
namespace {

struct Cfg {
  bool verbose = false;
  int64_t epochs = 2;
  double lr = 0.001;
  std::string progress = "auto";
};

class ConfigSchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s_.AddBool("time.verbose", &c_.verbose, "");
    s_.AddInt("training.epochs", &c_.epochs, 1, 100, "");
    s_.AddDouble("training.learning_rate", &c_.lr, 1e-9, 10, "");
    s_.AddString("training.progress", &c_.progress, "", {"auto", "bar", "lines", "off"});
  }
  Cfg c_;
  ConfigSchema s_;
};

TEST_F(ConfigSchemaTest, AppliesNestedYaml) {
  ASSERT_TRUE(s_.ApplyYamlText("time:\n  verbose: yes\ntraining:\n  epochs: 7\n  "
                               "learning_rate: 2e-4\n  progress: off\n",
                               "x.yaml")
                  .ok());
  EXPECT_TRUE(c_.verbose);
  EXPECT_EQ(c_.epochs, 7);
  EXPECT_DOUBLE_EQ(c_.lr, 2e-4);
  EXPECT_EQ(c_.progress, "off");
}

TEST_F(ConfigSchemaTest, EmptyTextAndEmptySectionSetNothing) {
  EXPECT_TRUE(s_.ApplyYamlText("", "x.yaml").ok());
  EXPECT_TRUE(s_.ApplyYamlText("time:\n", "x.yaml").ok());
  EXPECT_EQ(c_.epochs, 2);
}

TEST_F(ConfigSchemaTest, SyntaxErrorNamesFileLineAndColumn) {
  Status st = s_.ApplyYamlText("training:\n  epochs: [1, 2\n", "bad.yaml");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("bad.yaml:3:1: YAML syntax error: ", 0), 0u) << st.message();
}

TEST_F(ConfigSchemaTest, UnknownKeySuggestsTheNearest) {
  Status st = s_.ApplyYamlText("training:\n  epochs: 3\n  epocs: 4\n", "u.yaml");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "u.yaml:3:3: unknown key 'training.epocs'; did you mean 'training.epochs'?");
  EXPECT_EQ(c_.epochs, 2) << "a failed apply changes nothing";
  st = s_.ApplyYamlText("zzz: 1\n", "u.yaml");
  EXPECT_EQ(st.message(), "u.yaml:1:1: unknown key 'zzz'");
}

TEST_F(ConfigSchemaTest, WrongTypeAndRangeAreNamed) {
  EXPECT_EQ(s_.ApplyYamlText("training:\n  epochs: two\n", "t.yaml").message(),
            "t.yaml:2:11: training.epochs: expected an integer, got 'two'");
  EXPECT_EQ(s_.ApplyYamlText("training:\n  epochs: 0\n", "t.yaml").message(),
            "t.yaml:2:11: training.epochs: 0 is out of range (1 to 100)");
  EXPECT_EQ(s_.ApplyYamlText("time:\n  verbose: maybe\n", "t.yaml").message(),
            "t.yaml:2:12: time.verbose: expected true or false, got 'maybe'");
  EXPECT_EQ(s_.ApplyYamlText("training:\n  progress: loud\n", "t.yaml").message(),
            "t.yaml:2:13: training.progress: 'loud' is not one of: auto, bar, lines, off");
  EXPECT_EQ(s_.ApplyYamlText("training:\n  epochs:\n    a: 1\n", "t.yaml").message(),
            "t.yaml:3:5: training.epochs: expected an integer, got a mapping");
  EXPECT_EQ(s_.ApplyYamlText("training: 5\n", "t.yaml").message(),
            "t.yaml:1:11: 'training' is a section: expected keys under it, got a value");
  EXPECT_EQ(s_.ApplyYamlText("- 1\n- 2\n", "t.yaml").message(),
            "t.yaml:1:1: expected a mapping of config keys at the top level");
}

TEST(NearestWord, PrefersAKeyTheWordBegins) {
  std::vector<std::string> keys = {"training.epochs", "training.batch_size", "time.verbose"};
  EXPECT_EQ(NearestWord("training.batch", keys), "training.batch_size");
  EXPECT_EQ(NearestWord("training.epoch", keys), "training.epochs");
  EXPECT_EQ(NearestWord("time.verbos", keys), "time.verbose");
  EXPECT_EQ(NearestWord("data.num_workers", keys), "");
}

TEST_F(ConfigSchemaTest, Overrides) {
  ASSERT_TRUE(s_.ApplyOverride("training.epochs=9").ok());
  EXPECT_EQ(c_.epochs, 9);
  ASSERT_TRUE(s_.ApplyOverride(" time.verbose = true ").ok());
  EXPECT_TRUE(c_.verbose);
  EXPECT_EQ(s_.ApplyOverride("training.epochs").message(),
            "--set training.epochs: expected key=value");
  EXPECT_EQ(s_.ApplyOverride("traning.epochs=3").message(),
            "--set traning.epochs=3: unknown key 'traning.epochs'; did you mean "
            "'training.epochs'?");
  EXPECT_EQ(s_.ApplyOverride("training.learning_rate=fast").message(),
            "--set training.learning_rate=fast: training.learning_rate: expected a number, got "
            "'fast'");
}

TEST_F(ConfigSchemaTest, MissingFileIsNotFound) {
  Status st = s_.ApplyFile("/nonexistent/trainprof.yaml");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "cannot read config file /nonexistent/trainprof.yaml: no such file");
}

TEST_F(ConfigSchemaTest, FileErrorsNameTheFile) {
  std::string dir = testutil::FreshTempDir();
  std::string path = dir + "/c.yaml";
  std::ofstream(path) << "training:\n  epochs: 3\n\n  learning: 5\n";
  Status st = s_.ApplyFile(path);
  EXPECT_EQ(st.message(), path +
                              ":4:3: unknown key 'training.learning'; did you mean "
                              "'training.learning_rate'?");
}

TEST_F(ConfigSchemaTest, ValidateAndCurrentValues) {
  EXPECT_TRUE(s_.Validate().ok());
  c_.epochs = 1000;
  EXPECT_EQ(s_.Validate().message(), "training.epochs: 1000 is out of range (1 to 100)");
  auto values = s_.CurrentValues();
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(values[1].first, "training.epochs");
  EXPECT_EQ(std::get<int64_t>(values[1].second), 1000);
  EXPECT_EQ(ConfigValueText(values[0].second), "false");
  EXPECT_EQ(ConfigValueText(values[3].second), "auto");
}

}  // namespace
}  // namespace trainprof::base
