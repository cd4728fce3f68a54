// Our own declarations of the NVML types and constants gpudoctor uses, written from NVIDIA's
// published API reference so that no NVIDIA header is needed to build. Layouts must match the
// driver's ABI exactly: tests/unit/nvml_types_test.cpp pins their sizes and offsets. The stand-in
// NVML library under tests/fake_nvml implements the same declarations.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlGpmSample_t = struct nvmlGpmSample_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;

enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
};

// nvmlClockType_t
enum : unsigned {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3
};
// nvmlTemperatureSensors_t / nvmlTemperatureThresholds_t
enum : unsigned { NVML_TEMPERATURE_GPU = 0 };
enum : unsigned {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
};
// nvmlPcieUtilCounter_t
enum : unsigned { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
// nvmlPstates_t: 0..15, 32 unknown
enum : unsigned { NVML_PSTATE_UNKNOWN = 32 };
// nvmlEnableState_t
enum : unsigned { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };

// nvmlMemoryErrorType_t / nvmlEccCounterType_t (nvmlDeviceGetTotalEccErrors)
enum : unsigned { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum : unsigned { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
// nvmlPageRetirementCause_t (nvmlDeviceGetRetiredPages)
enum : unsigned {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
};

// Field ids for nvmlDeviceGetFieldValues. The NVLink throughput counters are KiB since the driver
// was loaded, per link (scopeId = link) or over all links (scopeId = UINT_MAX, as DCGM asks).
enum : unsigned {
  NVML_FI_DEV_MEMORY_TEMP = 82,
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138,
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
  NVML_FI_DEV_POWER_AVERAGE = 185,
  NVML_FI_DEV_POWER_INSTANT = 186,
};

// nvmlValueType_t
enum : int {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};

// GPM metric ids (nvmlGpmMetricId_t).
enum : unsigned {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,
  NVML_GPM_METRIC_INTEGER_UTIL = 4,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DFMA_TENSOR_UTIL = 6,
  NVML_GPM_METRIC_HMMA_TENSOR_UTIL = 7,
  NVML_GPM_METRIC_IMMA_TENSOR_UTIL = 9,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
  NVML_GPM_METRIC_FP64_UTIL = 11,
  NVML_GPM_METRIC_FP32_UTIL = 12,
  NVML_GPM_METRIC_FP16_UTIL = 13,
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
};

inline constexpr unsigned NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
inline constexpr unsigned NVML_DEVICE_SERIAL_BUFFER_SIZE = 30;
inline constexpr unsigned NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr unsigned NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
};

// nvmlProcessInfo_t as taken by nvmlDeviceGetComputeRunningProcesses_v2 and _v3.
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes; NVML_VALUE_NOT_AVAILABLE when unknown
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
inline constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp in microseconds
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};

struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;  // 0: the whole GPU (older headers call it `unused`, must be 0)
  long long timestamp;
  long long latencyUsec;
  int valueType;  // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};

struct nvmlGpmSupport_t {
  unsigned int version;
  unsigned int isSupportedDevice;
};
inline constexpr unsigned NVML_GPM_SUPPORT_VERSION = 1;

struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

// NVML sizes the metrics array with NVML_GPM_METRIC_MAX, which newer headers raised; the driver
// reads only numMetrics entries, so a smaller array is safe as long as numMetrics fits.
inline constexpr unsigned kGpmMetricCapacity = 98;
struct nvmlGpmMetricsGet_t {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricCapacity];
};
inline constexpr unsigned NVML_GPM_METRICS_GET_VERSION = 1;

// Events (nvmlDeviceRegisterEvents, nvmlEventSetWait_v2). nvmlEventSetWait (v1) writes the same
// struct without its last two members.
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x0000000000000008ULL;
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError (999: unknown XID)
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// vGPU software licensing as a vGPU guest sees it (nvmlDeviceGetGridLicensableFeatures_v4).
inline constexpr unsigned NVML_GRID_LICENSE_BUFFER_SIZE = 128;
inline constexpr unsigned NVML_GRID_LICENSE_FEATURE_MAX_COUNT = 3;
struct nvmlGridLicenseExpiry_t {
  unsigned int year;
  unsigned short month;
  unsigned short day;
  unsigned short hour;
  unsigned short min;
  unsigned short sec;
  unsigned char status;
};
struct nvmlGridLicensableFeature_t {
  unsigned int featureCode;   // nvmlGridLicenseFeatureCode_t
  unsigned int featureState;  // non-zero: licensed now
  char licenseInfo[NVML_GRID_LICENSE_BUFFER_SIZE];
  char productName[NVML_GRID_LICENSE_BUFFER_SIZE];
  unsigned int featureEnabled;  // non-zero: the feature is enabled on this vGPU
  nvmlGridLicenseExpiry_t licenseExpiry;
};
struct nvmlGridLicensableFeatures_t {
  int isGridLicenseSupported;  // zero outside a vGPU guest
  unsigned int licensableFeaturesCount;
  nvmlGridLicensableFeature_t gridLicensableFeatures[NVML_GRID_LICENSE_FEATURE_MAX_COUNT];
};

}  // extern "C"
