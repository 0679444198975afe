#include "system/proc_parse.h"

#include <gtest/gtest.h>

namespace trainprof::system {
namespace {

TEST(ParseProcStat, AddsBusyAndIdleJiffiesPerCpu) {
  auto st = ParseProcStat(
      "cpu  10 1 3 80 5 2 4 6 9 9\n"
      "cpu0 5 0 1 40 2 1 2 3 0 0\n"
      "cpu2 5 1 2 40 3 1 2 3 0 0\n"
      "intr 1 2 3\n");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  // busy = user + nice + system + irq + softirq + steal; guest is already in user and nice.
  EXPECT_EQ(st->all.busy, 10u + 1 + 3 + 2 + 4 + 6);
  EXPECT_EQ(st->all.total, st->all.busy + 80 + 5);
  ASSERT_EQ(st->cores.size(), 3u);
  EXPECT_TRUE(st->present[0]);
  EXPECT_FALSE(st->present[1]) << "cpu1 is offline: no line";
  EXPECT_EQ(st->cores[2].busy, 5u + 1 + 2 + 1 + 2 + 3);
}

TEST(ParseProcStat, OlderKernelsWithFourCountersStillParse) {
  auto st = ParseProcStat("cpu 10 0 5 100\n");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->all.busy, 15u);
  EXPECT_EQ(st->all.total, 115u);
}

TEST(ParseProcStat, BadInputNamesTheLine) {
  auto st = ParseProcStat("cpu  1 2 3 4\ncpu0 1 x 3 4\n");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().message(), "line 2: 'x' is not a counter");
  EXPECT_EQ(ParseProcStat("intr 1 2\n").status().message(), "no 'cpu' line");
  EXPECT_EQ(ParseProcStat("cpu 1 2\n").status().message(),
            "line 1: a cpu line with fewer than 4 counters");
}

TEST(ParseMeminfo, ReadsKilobytesAsBytes) {
  auto m = ParseMeminfo(
      "MemTotal:       1000 kB\nMemFree:  10 kB\nMemAvailable:    600 kB\n"
      "SwapTotal: 200 kB\nSwapFree: 50 kB\n");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->total, 1000u * 1024);
  EXPECT_EQ(m->available, 600u * 1024);
  EXPECT_EQ(m->swap_total - m->swap_free, 150u * 1024);
}

TEST(ParseMeminfo, MissingOrBadFieldsAreErrors) {
  EXPECT_EQ(ParseMeminfo("MemTotal: 1000 kB\nMemFree: 10 kB\n").status().message(),
            "no MemAvailable line (kernel older than 3.14?)");
  EXPECT_EQ(ParseMeminfo("MemTotal: lots kB\n").status().message(),
            "line 1: 'lots' is not a size in kB");
}

TEST(ParsePidStat, CommandNamesWithSpacesAndParentheses) {
  auto s = ParsePidStat(
      "4242 (a (b) c) S 1 4242 4242 0 -1 4194304 50000 0 10 0 1000 200 30 40 20 0 8 0 12345 "
      "4294967296 262144 18446744073709551615 1 1 0\n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->utime, 1000u);
  EXPECT_EQ(s->stime, 200u);
  EXPECT_EQ(s->cutime, 30u);
  EXPECT_EQ(s->cstime, 40u);
  EXPECT_EQ(s->threads, 8);
  EXPECT_EQ(s->vsize, 4294967296u);
  EXPECT_EQ(s->rss_pages, 262144u);
}

TEST(ParsePidStat, TruncatedLineIsAnError) {
  EXPECT_EQ(ParsePidStat("4242 (x) S 1 2 3").status().message(),
            "line 1: 4 fields after the command name, expected at least 22");
  EXPECT_EQ(ParsePidStat("4242 x S").status().message(), "line 1: no ')' after the command name");
}

TEST(ParseNetDev, SkipsHeadersAndReadsBytes) {
  auto n = ParseNetDev(
      "Inter-|   Receive  |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes\n"
      "    lo: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n"
      "eth0:300 3 0 0 0 0 0 0 400 4 0 0 0 0 0 0\n");
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(n->size(), 2u);
  EXPECT_EQ((*n)[0].name, "lo");
  EXPECT_EQ((*n)[1].name, "eth0");
  EXPECT_EQ((*n)[1].rx_bytes, 300u);
  EXPECT_EQ((*n)[1].tx_bytes, 400u);
  EXPECT_EQ(ParseNetDev("eth0: 1 2 3\n").status().message(),
            "line 1: interface 'eth0' lacks its receive and transmit byte counters");
}

TEST(ParseDiskstats, ReadsSectorCounters) {
  auto d = ParseDiskstats("   8       0 sda 1000 0 200000 500 2000 0 400000 800 0 1000 1300\n");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].name, "sda");
  EXPECT_EQ((*d)[0].sectors_read, 200000u);
  EXPECT_EQ((*d)[0].sectors_written, 400000u);
  EXPECT_EQ(ParseDiskstats("8 0 sda 1 2\n").status().message(),
            "line 1: a device line without sector counters");
}

TEST(ParseLoadavg, ThreeAverages) {
  auto l = ParseLoadavg("1.50 1.20 0.90 3/412 4300\n");
  ASSERT_TRUE(l.ok());
  EXPECT_DOUBLE_EQ((*l)[0], 1.5);
  EXPECT_DOUBLE_EQ((*l)[2], 0.9);
  EXPECT_EQ(ParseLoadavg("1.5 abc 2\n").status().message(), "line 1: 'abc' is not a number");
}

TEST(ParsePidList, SpaceSeparatedPids) {
  EXPECT_EQ(ParsePidList("4300 4301 \n"), (std::vector<int64_t>{4300, 4301}));
  EXPECT_TRUE(ParsePidList("").empty());
}

}  // namespace
}  // namespace trainprof::system

namespace trainprof::system {
namespace {

TEST(ProcParse, PidIoReadsStorageBytesAndNamesWhatIsWrong) {
  auto io = ParsePidIo(
      "rchar: 5000\nwchar: 300\nsyscr: 9\nsyscw: 3\nread_bytes: 4096\nwrite_bytes: 8192\n"
      "cancelled_write_bytes: 0\n");
  ASSERT_TRUE(io.ok()) << io.status().message();
  EXPECT_EQ(io->read_bytes, 4096u);
  EXPECT_EQ(io->write_bytes, 8192u);
  auto missing = ParsePidIo("rchar: 5000\nread_bytes: 1\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no read_bytes and write_bytes"), std::string::npos);
  auto bad = ParsePidIo("read_bytes: lots\nwrite_bytes: 1\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 1: read_bytes is not a byte count"),
            std::string::npos)
      << bad.status().message();
}

TEST(ProcParse, PidStatNameParentStateAndStart) {
  auto s = ParsePidStat(
      "4300 (python3 (x)) Z 4299 4300 4300 0 -1 4194560 100 0 0 0 250 50 10 5 20 0 3 0 "
      "123456 1000000 2500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->comm, "python3 (x)");
  EXPECT_EQ(s->state, 'Z');
  EXPECT_EQ(s->ppid, 4299);
  EXPECT_EQ(s->starttime, 123456u);
  EXPECT_EQ(s->threads, 3);
}

}  // namespace
}  // namespace trainprof::system
