// Board power of the CUDA device while something runs: NVML's energy counter and its time at the
// power limit, read before and after (no sampling thread). NVML (libnvidia-ml.so.1) comes with the
// driver and is dlopen'ed like libcuda, so nothing links against it; without it (no driver, a
// container without the library, a board without the counters) open() says why and the caller
// reports no power figures.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

namespace jitllm {

// One reading: cumulative counters and the host time they were read at.
struct PowerCounters {
    uint64_t energy_mj = 0;        // nvmlDeviceGetTotalEnergyConsumption: mJ since the driver loaded
    uint64_t power_capped_ns = 0;  // nvmlDeviceGetViolationStatus(POWER): time held below the
                                   // application clocks by the power limit
    double host_s = 0;             // steady clock, seconds
};

// What happened between two readings, or summed over several such intervals (+=).
struct PowerUse {
    double seconds = 0;
    double joules = 0;
    double capped_s = 0;  // time held below the application clocks by the power limit
    double watts() const { return seconds > 0 ? joules / seconds : 0.0; }
    // 100 * capped_s / seconds, at most 100 (the two counters are read a moment apart)
    double capped_pct() const { return seconds > 0 ? std::min(100.0, 100.0 * capped_s / seconds) : 0.0; }
    PowerUse& operator+=(const PowerUse& o) {
        seconds += o.seconds;
        joules += o.joules;
        capped_s += o.capped_s;
        return *this;
    }
};
// b after a; counters that went backwards (a driver reload) give zeros.
PowerUse power_use(const PowerCounters& a, const PowerCounters& b);

class NvmlPower {
public:
    // The board with this PCI bus id ("0000:3b:00.0", DeviceInfo::pci_bus_id). nullptr and *why
    // ("libnvidia-ml.so.1 not found", "nvmlDeviceGetTotalEnergyConsumption: Not Supported", ...)
    // when NVML or a counter is not available.
    static std::unique_ptr<NvmlPower> open(const std::string& pci_bus_id, std::string* why);
    ~NvmlPower();
    NvmlPower(const NvmlPower&) = delete;
    NvmlPower& operator=(const NvmlPower&) = delete;
    // false when a read fails (the board went away); c untouched then
    bool read(PowerCounters* c) const;

private:
    struct Api;
    NvmlPower() = default;
    std::unique_ptr<Api> api_;
};

}  // namespace jitllm
