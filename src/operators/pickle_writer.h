// A small writer of Python's pickle format (protocol 2): dicts, lists, tuples, str, int, float,
// bool and None, streamed as they are built, so trainprof writes memory_snapshot.pickle (the
// file pytorch.org/memory_viz opens) from C++ without Python. Strings that are not valid UTF-8
// get U+FFFD for each bad byte, as Python's pickle cannot load them otherwise.
//
//   PickleWriter p;
//   p.BeginDict();
//   p.Key("segments"); p.BeginList(); ... p.End();
//   p.End();
//   std::string bytes = p.Finish();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainprof::torchlib {

class PickleWriter {
 public:
  PickleWriter();
  void BeginDict();
  void BeginList();
  void End();                   // closes the innermost dict or list
  void Key(std::string_view k)  // inside a dict: the next value's key
  {
    Str(k);
  }
  void Str(std::string_view s);
  void Int(int64_t v);
  void UInt(uint64_t v);
  void Float(double v);
  void Bool(bool v);
  void None();
  void Tuple2Int(int64_t a, int64_t b);
  // A dict member: Key(k) then the value.
  void StrItem(std::string_view k, std::string_view v) {
    Key(k);
    Str(v);
  }
  void IntItem(std::string_view k, int64_t v) {
    Key(k);
    Int(v);
  }
  void UIntItem(std::string_view k, uint64_t v) {
    Key(k);
    UInt(v);
  }
  // The pickle's bytes; the writer is done. Every Begin must have its End.
  std::string Finish();

 private:
  void Long(const unsigned char* le_bytes, size_t n);
  std::string out_;
  std::vector<char> open_;  // per open container, the opcode that closes it
};

}  // namespace trainprof::torchlib
