// NVML through dlopen: the handful of entry points the power figures need, declared here with
// NVML's C ABI (nvml.h is not part of this toolkit install): return codes are ints (0 = success),
// a device is an opaque pointer, the violation record is two unsigned 64-bit integers.
#include "backends/cuda/nvml_power.h"

#include <dlfcn.h>

#include <chrono>
#include <type_traits>
#include <utility>

#include "core/error.h"

namespace jitllm {

namespace {

using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlViolationTime {
    unsigned long long reference_time;  // host timestamp, µs
    unsigned long long violation_time;  // ns
};
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlPerfPolicyPower = 0;  // NVML_PERF_POLICY_POWER

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

struct NvmlPower::Api {
    void* lib = nullptr;
    int (*init)() = nullptr;
    int (*shutdown)() = nullptr;
    const char* (*error_string)(int) = nullptr;
    int (*by_bus_id)(const char*, NvmlDevice*) = nullptr;
    int (*energy)(NvmlDevice, unsigned long long*) = nullptr;
    int (*violation)(NvmlDevice, int, NvmlViolationTime*) = nullptr;
    NvmlDevice dev = nullptr;
    bool initialised = false;
    ~Api() {
        if (initialised && shutdown) shutdown();
        if (lib) dlclose(lib);
    }
    std::string err(const char* call, int r) const {
        return fmt::format("{}: {}", call, error_string ? error_string(r) : fmt::format("error {}", r));
    }
};

PowerUse power_use(const PowerCounters& a, const PowerCounters& b) {
    PowerUse u;
    if (b.energy_mj < a.energy_mj || b.power_capped_ns < a.power_capped_ns || b.host_s <= a.host_s) return u;
    u.seconds = b.host_s - a.host_s;
    u.joules = double(b.energy_mj - a.energy_mj) / 1e3;
    u.capped_s = double(b.power_capped_ns - a.power_capped_ns) / 1e9;
    return u;
}

std::unique_ptr<NvmlPower> NvmlPower::open(const std::string& pci_bus_id, std::string* why) {
    auto say = [&](std::string s) {
        if (why) *why = std::move(s);
        return nullptr;
    };
    if (pci_bus_id.empty()) return say("no PCI bus id for the device");
    auto api = std::make_unique<Api>();
    api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!api->lib) {
        const char* e = dlerror();
        return say(fmt::format("libnvidia-ml.so.1 not found (dlopen: {})", e ? e : "unknown"));
    }
    auto sym = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(api->lib, name));
        return fn != nullptr;
    };
    for (auto [ok, name] : {std::pair{sym(api->init, "nvmlInit_v2"), "nvmlInit_v2"},
                            {sym(api->shutdown, "nvmlShutdown"), "nvmlShutdown"},
                            {sym(api->error_string, "nvmlErrorString"), "nvmlErrorString"},
                            {sym(api->by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2"), "nvmlDeviceGetHandleByPciBusId_v2"},
                            {sym(api->energy, "nvmlDeviceGetTotalEnergyConsumption"), "nvmlDeviceGetTotalEnergyConsumption"},
                            {sym(api->violation, "nvmlDeviceGetViolationStatus"), "nvmlDeviceGetViolationStatus"}})
        if (!ok) return say(fmt::format("libnvidia-ml.so.1 has no {}", name));
    if (int r = api->init(); r != kNvmlSuccess) return say(api->err("nvmlInit_v2", r));
    api->initialised = true;
    if (int r = api->by_bus_id(pci_bus_id.c_str(), &api->dev); r != kNvmlSuccess)
        return say(api->err("nvmlDeviceGetHandleByPciBusId_v2", r));
    std::unique_ptr<NvmlPower> p(new NvmlPower());
    p->api_ = std::move(api);
    unsigned long long e = 0;  // both counters must answer once before any figure is reported
    if (int r = p->api_->energy(p->api_->dev, &e); r != kNvmlSuccess)
        return say(p->api_->err("nvmlDeviceGetTotalEnergyConsumption", r));
    NvmlViolationTime v{};
    if (int r = p->api_->violation(p->api_->dev, kNvmlPerfPolicyPower, &v); r != kNvmlSuccess)
        return say(p->api_->err("nvmlDeviceGetViolationStatus", r));
    return p;
}

NvmlPower::~NvmlPower() = default;

bool NvmlPower::read(PowerCounters* c) const {
    unsigned long long e = 0;
    NvmlViolationTime v{};
    if (api_->energy(api_->dev, &e) != kNvmlSuccess) return false;
    if (api_->violation(api_->dev, kNvmlPerfPolicyPower, &v) != kNvmlSuccess) return false;
    c->energy_mj = e;
    c->power_capped_ns = v.violation_time;
    c->host_s = now_s();
    return true;
}

}  // namespace jitllm
