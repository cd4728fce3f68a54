// The stand-in NVML library, continued: XID events (nvmlEventSetCreate, nvmlDeviceRegisterEvents,
// nvmlEventSetWait(_v2), nvmlEventSetFree). Every sample of a device that has "xid" is one XID
// event at that sample's time (docs/capture-format.md); a set receives each event once, from the
// replay start on, when the replay reaches it.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "runtime.hpp"

// What an nvmlEventSet_t points at: the devices registered and where each one's next event is.
struct nvmlEventSet_st {
  std::mutex mu;
  std::shared_ptr<const fake_nvml::State> state;  // the replay the set was made in
  struct Watch {
    const nvmlDevice_st* dev;
    fake_nvml::EventCursor next;
  };
  std::vector<Watch> watches;
};

using fake_nvml::begin;
using fake_nvml::Call;

namespace {

constexpr std::string_view kXidField = "xid";
constexpr unsigned kNoInstance = 0xffffffffU;  // what NVML reports without MIG

// v2 fills the whole nvmlEventData_t; v1 (older drivers) only the members before gpuInstanceId.
nvmlReturn_t wait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeout_ms, bool v2) {
  const auto state = fake_nvml::current_state();
  if (!state) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  // timeout 0 (gpudoctor's poll every sample): one look, no clock read beyond the replay's.
  const auto deadline =
      timeout_ms == 0 ? std::chrono::steady_clock::time_point{}
                      : std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    {
      const std::lock_guard lock(set->mu);
      if (set->state != state) return NVML_ERROR_INVALID_ARGUMENT;  // made before a re-init
      const double now = state->now();
      for (auto& w : set->watches) {
        if (w.dev->lost_at_s && now >= *w.dev->lost_at_s) return NVML_ERROR_GPU_IS_LOST;
        const auto xid = w.dev->next_event(w.next, now);
        if (!xid) continue;
        w.dev->advance(w.next);
        nvmlEventData_t e{};
        e.device = const_cast<nvmlDevice_t>(w.dev);  // handles are non-const; nothing writes
        e.eventType = nvmlEventTypeXidCriticalError;
        e.eventData = fake_nvml::to_unsigned<unsigned long long>(*xid);
        e.gpuInstanceId = kNoInstance;
        e.computeInstanceId = kNoInstance;
        std::memcpy(data, &e, v2 ? sizeof e : offsetof(nvmlEventData_t, gpuInstanceId));
        return NVML_SUCCESS;
      }
    }
    if (timeout_ms == 0) return NVML_ERROR_TIMEOUT;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return NVML_ERROR_TIMEOUT;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        deadline - now, std::chrono::milliseconds(5)));
  }
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  auto state = fake_nvml::current_state();
  if (!state) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = new (std::nothrow) nvmlEventSet_st();
  if (*set == nullptr) return 20;  // NVML_ERROR_MEMORY
  (*set)->state = std::move(state);
  return NVML_SUCCESS;
}

// Only XID events are replayed: asking for any other type is NOT_SUPPORTED (and, as NVML says,
// registers none of them). errors.xid forces a code, as for any field.
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                      nvmlEventSet_t set) {
  Call c;
  if (const auto r = begin(device, set != nullptr && types != 0, {kXidField}, c)) return r;
  if ((types & ~nvmlEventTypeXidCriticalError) != 0) return NVML_ERROR_NOT_SUPPORTED;
  const std::lock_guard lock(set->mu);
  if (set->state != c.state) return NVML_ERROR_INVALID_ARGUMENT;
  for (const auto& w : set->watches)
    if (w.dev == c.dev) return NVML_SUCCESS;
  set->watches.push_back({c.dev, c.dev->event_cursor(kXidField, c.state->replay.start_s)});
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeout_ms) {
  return wait(set, data, timeout_ms, false);
}
#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeout_ms) {
  return wait(set, data, timeout_ms, true);
}
#endif

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  delete set;
  return NVML_SUCCESS;
}

}  // extern "C"
