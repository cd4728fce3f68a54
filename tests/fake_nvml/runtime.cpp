#include "runtime.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>

namespace fake_nvml {
namespace {

// Init reference count and the loaded state. Built in static storage and never destroyed, so no
// destructor of this library runs at exit or dlclose while another thread may still call in.
struct Globals {
  std::mutex mu;
  int refcount = 0;
  std::shared_ptr<const State> state;
};

Globals& globals() {
  alignas(Globals) static unsigned char storage[sizeof(Globals)];
  static Globals* const g = new (storage) Globals();
  return *g;
}

// Reads a number from the environment; `fallback` when unset or empty.
double env_number(const char* name, double fallback) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return fallback;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || *end != '\0' || !std::isfinite(v)) {
    throw std::runtime_error(std::string(name) + "=\"" + s + "\" is not a number");
  }
  return v;
}

Replay replay_from_env() {
  Replay r;
  r.speed = env_number("GPUDOCTOR_FAKE_NVML_SPEED", 1.0);
  if (r.speed <= 0) throw std::runtime_error("GPUDOCTOR_FAKE_NVML_SPEED must be above 0");
  r.start_s = env_number("GPUDOCTOR_FAKE_NVML_START_S", 0.0);
  const char* loop = std::getenv("GPUDOCTOR_FAKE_NVML_LOOP");
  const std::string_view l = loop ? loop : "";
  if (l == "1" || l == "true" || l == "yes") {
    r.loop = true;
  } else if (!(l.empty() || l == "0" || l == "false" || l == "no")) {
    throw std::runtime_error("GPUDOCTOR_FAKE_NVML_LOOP=\"" + std::string(l) + "\" is not 0 or 1");
  }
  return r;
}

struct ErrorText {
  nvmlReturn_t code;
  const char* text;
};
// nvmlErrorString's texts, as the driver's library words them.
constexpr ErrorText kErrorTexts[] = {
    {0, "Success"},
    {1, "Uninitialized"},
    {2, "Invalid Argument"},
    {3, "Not Supported"},
    {4, "Insufficient Permissions"},
    {5, "Already Initialized"},
    {6, "Not Found"},
    {7, "Insufficient Size"},
    {8, "Insufficient External Power"},
    {9, "Driver Not Loaded"},
    {10, "Timeout"},
    {11, "Interrupt Request Issue"},
    {12, "NVML Shared Library Not Found"},
    {13, "Function Not Found"},
    {14, "Corrupted infoROM"},
    {15, "GPU is lost"},
    {16, "GPU requires restart"},
    {17, "The operating system has blocked the request."},
    {18, "RM has detected an NVML/RM version mismatch."},
    {19, "In use by another client"},
    {20, "Insufficient Memory"},
    {21, "No data"},
    {23, "Ran out of critical resources, other than memory"},
    {24, "The requested frequency is not supported"},
    {25, "The provided version is invalid/unsupported"},
    {26, "The requested functionality has been deprecated"},
    {27, "The system is not ready for the request"},
    {28, "The GPU was not found"},
    {29, "The operation is not allowed in the current state"},
};

}  // namespace

double State::now() const {
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - origin;
  return elapsed.count() * replay.speed + replay.start_s;
}

int64_t State::wall_us(double t) const {
  return origin_wall_us +
         static_cast<int64_t>(std::llround((t - replay.start_s) / replay.speed * 1e6));
}

const nvmlDevice_st* State::device(nvmlDevice_t handle) const {
  const auto& d = capture.devices;
  if (handle == nullptr || d.empty()) return nullptr;
  // Compare addresses as integers: the handle may be stale or foreign.
  const auto h = reinterpret_cast<std::uintptr_t>(handle);
  const auto first = reinterpret_cast<std::uintptr_t>(d.data());
  const auto last = reinterpret_cast<std::uintptr_t>(d.data() + d.size() - 1);
  if (h < first || h > last || (h - first) % sizeof(nvmlDevice_st) != 0) return nullptr;
  return &d[(h - first) / sizeof(nvmlDevice_st)];
}

std::shared_ptr<const State> current_state() {
  Globals& g = globals();
  const std::lock_guard lock(g.mu);
  return g.state;
}

nvmlReturn_t init() {
  Globals& g = globals();
  const std::lock_guard lock(g.mu);
  if (g.refcount > 0) {
    ++g.refcount;
    return NVML_SUCCESS;
  }
  const char* path = std::getenv("GPUDOCTOR_FAKE_NVML_CAPTURE");
  if (path == nullptr || *path == '\0') return NVML_ERROR_DRIVER_NOT_LOADED;
  try {
    auto s = std::make_shared<State>();
    s->replay = replay_from_env();
    s->capture = load_capture(path, s->replay);
    s->origin = std::chrono::steady_clock::now();
    s->origin_wall_us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    g.state = std::move(s);
    g.refcount = 1;
    return NVML_SUCCESS;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake-nvml: %s\n", e.what());
    return NVML_ERROR_UNKNOWN;
  }
}

nvmlReturn_t shutdown() {
  std::shared_ptr<const State> last;  // released after the lock, outside it
  Globals& g = globals();
  const std::lock_guard lock(g.mu);
  if (g.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (--g.refcount == 0) last = std::move(g.state);
  return NVML_SUCCESS;
}

const char* error_string(nvmlReturn_t code) {
  for (const auto& e : kErrorTexts) {
    if (e.code == code) return e.text;
  }
  return "Unknown Error";
}

nvmlReturn_t begin(nvmlDevice_t handle, bool args_ok, std::initializer_list<std::string_view> keys,
                   Call& call, double extra_delay_ms) {
  call.state = current_state();
  if (!call.state) return NVML_ERROR_UNINITIALIZED;
  call.dev = call.state->device(handle);
  if (call.dev == nullptr || !args_ok) return NVML_ERROR_INVALID_ARGUMENT;
  double delay = extra_delay_ms;
  for (const auto key : keys) delay = std::max(delay, call.dev->delay_ms(key));
  if (delay > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay));
  call.now = call.state->now();
  if (call.dev->lost_at_s && call.now >= *call.dev->lost_at_s) return NVML_ERROR_GPU_IS_LOST;
  for (const auto key : keys) {
    if (const auto e = call.dev->error(key)) return *e;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t copy_string(std::string_view s, char* buf, unsigned length) {
  if (buf == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < s.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  return NVML_SUCCESS;
}

}  // namespace fake_nvml
