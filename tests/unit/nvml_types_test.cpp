// Pins the layouts of our NVML declarations to the driver's ABI (x86-64 / aarch64 LP64).
#include <gtest/gtest.h>

#include <cstddef>

#include "sources/nvml/nvml_types.hpp"

TEST(NvmlTypes, LayoutsMatchTheDriverAbi) {
  EXPECT_EQ(sizeof(nvmlUtilization_t), 8u);
  EXPECT_EQ(sizeof(nvmlMemory_t), 24u);
  EXPECT_EQ(sizeof(nvmlPciInfo_t), 68u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, busId), 36u);
  EXPECT_EQ(sizeof(nvmlProcessInfo_t), 24u);
  EXPECT_EQ(offsetof(nvmlProcessInfo_t, usedGpuMemory), 8u);
  EXPECT_EQ(sizeof(nvmlProcessUtilizationSample_t), 32u);
  EXPECT_EQ(sizeof(nvmlValue_t), 8u);
  EXPECT_EQ(sizeof(nvmlFieldValue_t), 40u);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, value), 32u);
  EXPECT_EQ(sizeof(nvmlGpmSupport_t), 8u);
  EXPECT_EQ(sizeof(nvmlGpmMetric_t), 40u);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, metrics), 24u);
  EXPECT_EQ(sizeof(nvmlEventData_t), 32u);
  EXPECT_EQ(offsetof(nvmlEventData_t, gpuInstanceId), 24u);  // where nvmlEventSetWait (v1) stops
  EXPECT_EQ(sizeof(nvmlGridLicenseExpiry_t), 16u);
  EXPECT_EQ(sizeof(nvmlGridLicensableFeature_t), 284u);
  EXPECT_EQ(sizeof(nvmlGridLicensableFeatures_t), 860u);
}
