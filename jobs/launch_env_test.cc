#include "jobs/launch_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace trainprof::jobs {
namespace {

StatusOr<LaunchEnv> Parse(const std::map<std::string, std::string>& vars) {
  return ParseLaunchEnv([&](const char* k) -> const char* {
    auto it = vars.find(k);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(LaunchEnv, NoLauncherIsOneRank) {
  auto e = Parse({{"HOME", "/root"}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->launcher, "");
  EXPECT_EQ(e->world_size, 1);
  EXPECT_EQ(e->rank, 0);
}

TEST(LaunchEnv, Torchrun) {
  auto e = Parse({{"RANK", "5"},
                  {"WORLD_SIZE", "8"},
                  {"LOCAL_RANK", "1"},
                  {"LOCAL_WORLD_SIZE", "4"},
                  {"MASTER_ADDR", "node07"},
                  {"MASTER_PORT", "29400"},
                  {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                  // Slurm's are ignored when torchrun's are set (torchrun inside srun).
                  {"SLURM_PROCID", "0"},
                  {"SLURM_NTASKS", "2"}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->launcher, "torchrun");
  EXPECT_EQ(e->rank, 5);
  EXPECT_EQ(e->world_size, 8);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->local_world_size, 4);
  EXPECT_EQ(e->master_addr, "node07");
  EXPECT_EQ(e->master_port, 29400);
  EXPECT_TRUE(e->agent_store);
}

TEST(LaunchEnv, Slurm) {
  auto e = Parse({{"SLURM_PROCID", "3"},
                  {"SLURM_NTASKS", "4"},
                  {"SLURM_LOCALID", "1"},
                  {"SLURM_NTASKS_PER_NODE", "2(x2)"},
                  {"SLURM_JOB_NODELIST", "gpu-a[007-008],gpu-b1"},
                  {"SLURM_JOB_ID", "4812345"}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->launcher, "slurm");
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->world_size, 4);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->local_world_size, 2);
  EXPECT_EQ(e->master_addr, "gpu-a007");
  EXPECT_EQ(e->master_port, 15000 + 2345);
  EXPECT_FALSE(e->agent_store);
  // MASTER_ADDR / MASTER_PORT set by the batch script win.
  auto m = Parse({{"SLURM_PROCID", "0"},
                  {"SLURM_NTASKS", "2"},
                  {"SLURM_JOB_NODELIST", "n[1-2]"},
                  {"MASTER_ADDR", "10.0.0.1"},
                  {"MASTER_PORT", "12345"}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->master_addr, "10.0.0.1");
  EXPECT_EQ(m->master_port, 12345);
}

TEST(LaunchEnv, SlurmNodelists) {
  EXPECT_EQ(*FirstSlurmHost("node01"), "node01");
  EXPECT_EQ(*FirstSlurmHost("a,b"), "a");
  EXPECT_EQ(*FirstSlurmHost("node[07-09,12],gpu3"), "node07");
  EXPECT_EQ(*FirstSlurmHost("x[3,1]"), "x3");
  EXPECT_FALSE(FirstSlurmHost("").ok());
  EXPECT_FALSE(FirstSlurmHost("node[07").ok());
  EXPECT_FALSE(FirstSlurmHost("[1-2]").ok());
}

TEST(LaunchEnv, BadValuesNameTheVariable) {
  auto a = Parse({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(),
            "environment: rank 2 is not below the world size 2 (RANK, WORLD_SIZE)");
  auto b = Parse({{"RANK", "one"}, {"WORLD_SIZE", "2"}});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("RANK=\"one\""), std::string::npos);
  auto c = Parse({{"RANK", "0"}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("WORLD_SIZE is not"), std::string::npos);
  auto d = Parse({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("MASTER_PORT"), std::string::npos);
  auto s = Parse({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n[1-"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("SLURM_JOB_NODELIST"), std::string::npos);
}

}  // namespace
}  // namespace trainprof::jobs
