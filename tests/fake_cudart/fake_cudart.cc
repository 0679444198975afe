// A stand-in for libcudart.so that the time.cuda_events tests load with dlopen: events are
// stamped by a virtual GPU clock that advances 1 ms at every cudaEventRecord, so the GPU time
// between two marks is exactly the number of marks made from the first to the second, in ms.
#include <atomic>
#include <cstdlib>

namespace {
std::atomic<long> g_clock_ms{0};
struct FakeEvent {
  long ms = -1;  // -1: never recorded
};
}  // namespace

extern "C" {

int cudaGetDeviceCount(int* n) {
  const char* v = std::getenv("FAKE_CUDART_DEVICES");
  *n = v != nullptr ? std::atoi(v) : 1;
  return 0;
}
int cudaEventCreateWithFlags(void** event, unsigned) {
  *event = new FakeEvent;
  return 0;
}
int cudaEventRecord(void* event, void*) {
  static_cast<FakeEvent*>(event)->ms = ++g_clock_ms;
  return 0;
}
int cudaEventSynchronize(void* event) { return static_cast<FakeEvent*>(event)->ms < 0 ? 600 : 0; }
int cudaEventElapsedTime(float* ms, void* begin, void* end) {
  const long b = static_cast<FakeEvent*>(begin)->ms, e = static_cast<FakeEvent*>(end)->ms;
  if (b < 0 || e < 0) return 600;  // cudaErrorNotReady
  *ms = static_cast<float>(e - b);
  return 0;
}
int cudaEventDestroy(void* event) {
  delete static_cast<FakeEvent*>(event);
  return 0;
}
const char* cudaGetErrorString(int) { return "fake error"; }

}  // extern "C"
