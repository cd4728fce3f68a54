// A fixed amount of sampling for instruction counts: N NvmlSource::sample() calls of the NVML
// library GPUDOCTOR_NVML_LIB points at (the stand-in and GPUDOCTOR_FAKE_NVML_CAPTURE, for the
// bench). Run under `valgrind --tool=callgrind` with two N and subtract: the instructions of one
// sample of every GPU, startup excluded, on every thread (gpudoctor's workers and the library),
// a figure a loaded machine does not blur as it blurs wall time (bench/RESULTS.md). It uses
// nothing but open_source(), so the same file builds against an older gpudoctor_core.
//
// usage: gpudoctor_sample_count N
#include <cstdio>
#include <cstdlib>

#include "sources/source.hpp"

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  auto src = gpudoctor::open_source("nvml", {});
  if (!src) {
    std::fprintf(stderr, "gpudoctor_sample_count: %s\n", src.error().message.c_str());
    return 1;
  }
  size_t devices = 0;
  for (int i = 0; i < n; ++i) devices += (*src)->sample().devices.size();
  std::printf("%d samples, %zu GPU samples\n", n, devices);
  return 0;
}
