#include "snapshot/pickle_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainprof::snapshot {
namespace {

// A pickle assembled opcode by opcode, so a test says exactly which bytes it feeds.
class Bytes {
 public:
  explicit Bytes(int proto = 4) { Op(0x80).Raw(std::string(1, static_cast<char>(proto))); }
  Bytes& Op(uint8_t op) {
    s_ += static_cast<char>(op);
    return *this;
  }
  Bytes& Raw(const std::string& b) {
    s_ += b;
    return *this;
  }
  Bytes& U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) s_ += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  Bytes& Str(const std::string& t) {  // SHORT_BINUNICODE, then MEMOIZE
    return Op(0x8c).Raw(std::string(1, static_cast<char>(t.size()))).Raw(t).Op(0x94);
  }
  Bytes& Int1(uint8_t v) { return Op('K').Raw(std::string(1, static_cast<char>(v))); }
  Bytes& Stop() { return Op('.'); }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

TEST(PickleReader, ReadsADictOfListsWithMemoisedStrings) {
  // {"a": [1, 2, "x"], "b": "x"}: the second "x" is a memo GET.
  Bytes b;
  b.Op('}').Op(0x94).Op('(').Str("a").Op(']').Op(0x94).Op('(').Int1(1).Int1(2).Str("x");
  b.Op('e').Str("b").Op('h').Raw(std::string(1, 3)).Op('u').Stop();
  PickleReader r;
  auto top = r.ReadBytes(b.str(), "t.pickle");
  ASSERT_TRUE(top.ok()) << top.status().message();
  const PickleValue* a = r.Find(*top, "a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(r.Items(*a).size(), 3u);
  EXPECT_EQ(r.Int(&r.Items(*a)[1]), 2);
  EXPECT_EQ(r.Str(r.Items(*a)[2]), "x");
  EXPECT_EQ(r.Str(*r.Find(*top, "b")), "x");
}

TEST(PickleReader, RefusesReduceNamingTheByteAndOpcode) {
  Bytes b;
  b.Str("os").Str("system").Op(0x93).Str("echo hacked").Op(0x85).Op('R').Stop();
  PickleReader r;
  auto top = r.ReadBytes(b.str(), "evil.pickle");
  ASSERT_FALSE(top.ok());
  const std::string& m = top.status().message();
  EXPECT_NE(m.find("evil.pickle: byte "), std::string::npos) << m;
  EXPECT_NE(m.find("STACK_GLOBAL"), std::string::npos) << m;  // refused before REDUCE
  EXPECT_EQ(m.find('\n'), std::string::npos);
}

TEST(PickleReader, RefusesEveryOpcodeThatNamesOrCallsObjects) {
  for (int op : {int{'c'}, int{'i'}, int{'o'}, int{'R'}, int{'b'}, int{'P'}, int{'Q'}, 0x81, 0x92,
                 0x93, 0x82}) {
    Bytes b;
    b.Op('N').Op(static_cast<uint8_t>(op)).Stop();
    PickleReader r;
    auto top = r.ReadBytes(b.str(), "x.pickle");
    ASSERT_FALSE(top.ok()) << op;
    EXPECT_NE(top.status().message().find("refused"), std::string::npos) << op;
    EXPECT_NE(top.status().message().find("byte 3:"), std::string::npos) << top.status().message();
  }
}

TEST(PickleReader, AHugeLengthClaimIsAnErrorNotAnAllocation) {
  Bytes b;
  b.Op('X').U32(1u << 30).Raw("tiny").Stop();
  PickleReader r;
  auto top = r.ReadBytes(b.str(), "big.pickle");
  ASSERT_FALSE(top.ok());
  EXPECT_NE(top.status().message().find("1073741824"), std::string::npos) << top.status().message();
  EXPECT_NE(top.status().message().find("byte 2:"), std::string::npos);  // the BINUNICODE
}

TEST(PickleReader, ATruncatedPickleSaysCutShort) {
  Bytes b;
  b.Op(']').Op('(').Int1(1).Int1(2).Str("abc").Op('e').Stop();
  for (size_t cut = 1; cut + 1 < b.str().size(); ++cut) {
    PickleReader r;
    auto top = r.ReadBytes(b.str().substr(0, cut), "cut.pickle");
    ASSERT_FALSE(top.ok()) << cut;
    EXPECT_EQ(top.status().message().find('\n'), std::string::npos);
  }
  PickleReader whole;
  EXPECT_TRUE(whole.ReadBytes(b.str(), "whole.pickle").ok());
}

TEST(PickleReader, DeepNestingIsRefused) {
  Bytes b;
  const int n = PickleReader::kMaxDepth + 5;
  for (int i = 0; i < n; ++i) b.Op(']');
  for (int i = 0; i + 1 < n; ++i) b.Op('a');
  b.Stop();
  PickleReader r;
  auto top = r.ReadBytes(b.str(), "deep.pickle");
  ASSERT_FALSE(top.ok());
  EXPECT_NE(top.status().message().find("deeper than"), std::string::npos)
      << top.status().message();
}

TEST(PickleReader, LongIntegersAndUnsignedAddresses) {
  Bytes b;
  // LONG1 9 bytes: 2^64 - 1 (an unsigned address); LONG1 2 bytes: -2; LONG1 0 bytes: 0.
  b.Op(']').Op('(');
  b.Op(0x8a).Raw(std::string(1, 9)).Raw(std::string(8, '\xff')).Raw(std::string(1, '\0'));
  b.Op(0x8a).Raw(std::string(1, 2)).Raw("\xfe\xff");
  b.Op(0x8a).Raw(std::string(1, 0));
  b.Op('e').Stop();
  PickleReader r;
  auto top = r.ReadBytes(b.str(), "ints.pickle");
  ASSERT_TRUE(top.ok()) << top.status().message();
  const auto& items = r.Items(*top);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].kind, PickleKind::kUInt);
  EXPECT_EQ(static_cast<uint64_t>(items[0].i), ~uint64_t{0});
  EXPECT_EQ(r.Int(&items[1]), -2);
  EXPECT_EQ(r.Int(&items[2]), 0);
}

TEST(PickleReader, StreamsItemsAndGivesTheirContainersBack) {
  // {"device_traces": [[{"n": 0}, {"n": 1}, ... ]]}: each entry handed to the sink.
  Bytes b;
  b.Op('}').Op(0x94).Str("device_traces").Op(']').Op(0x94).Op(']').Op(0x94);
  const int n = 100;
  for (int i = 0; i < n; ++i)
    b.Op('}').Op(0x94).Str("n").Int1(static_cast<uint8_t>(i)).Op('s').Op('a');
  b.Op('a').Op('s').Stop();
  PickleReader r;
  std::vector<int64_t> seen;
  r.StreamItems("device_traces/*", [&](uint32_t list, const PickleValue& item) -> Status {
    EXPECT_EQ(list, 0u);
    seen.push_back(r.Int(r.Find(item, "n"), -1));
    r.Release(item);
    return Status::Ok();
  });
  auto top = r.ReadBytes(b.str(), "s.pickle");
  ASSERT_TRUE(top.ok()) << top.status().message();
  ASSERT_EQ(seen.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(seen[i], i);
  // The top dict, device_traces and its one list; the entries were given back.
  EXPECT_EQ(r.live_containers(), 3u);
}

TEST(PickleReader, NotAPickleAndOldProtocols) {
  PickleReader r;
  auto json = r.ReadBytes("{\"a\": 1}", "x.json");
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.status().message().find("not a pickle"), std::string::npos);
  Bytes p1(1);
  p1.Op('N').Stop();
  PickleReader r1;
  auto old = r1.ReadBytes(p1.str(), "old.pickle");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("protocol 1"), std::string::npos);
}

}  // namespace
}  // namespace trainprof::snapshot
