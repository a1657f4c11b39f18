// The OpenCL backend's tunables (cl_schedule.h ClTunables): --tune KEY=VALUE with --opencl.
#include <cstdlib>

#include "backends/opencl/cl_schedule.h"
#include "core/error.h"

namespace jitllm {

namespace {

struct Key {
    const char* name;
    int ClTunables::* field;
    int lo, hi;
    bool pow2;
};

constexpr Key kKeys[] = {
    {"gemv.rows", &ClTunables::gemv_rows, 1, 64, false},
    {"gemv.wg", &ClTunables::gemv_wg, 32, 1024, true},
    {"gemv.groups", &ClTunables::gemv_groups, 1, 64, false},
    {"gemv.ahead", &ClTunables::gemv_ahead, 1, 4, false},
    {"local.mem", &ClTunables::local_mem, 1024, 1 << 30, false},
};

}  // namespace

void cl_tune_apply(ClTunables& t, const std::string& key_value) {
    const size_t eq = key_value.find('=');
    const std::string key = key_value.substr(0, eq);
    std::string names;
    for (const Key& k : kKeys) {
        names += (names.empty() ? "" : ", ") + std::string(k.name);
        if (key != k.name) continue;
        const std::string v = eq == std::string::npos ? "" : key_value.substr(eq + 1);
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || n < k.lo || n > k.hi || (k.pow2 && (n & (n - 1)) != 0))
            fail_usage("--tune {}: expected an integer from {} to {}{} for {}, found '{}'", key_value, k.lo, k.hi,
                       k.pow2 ? " (a power of 2)" : "", k.name, v);
        t.*k.field = int(n);
        return;
    }
    fail_usage("--tune {}: expected one of the OpenCL backend's keys ({}), found '{}'", key_value, names, key);
}

std::string ClTunables::describe() const {
    std::string s;
    for (const Key& k : kKeys)
        if (this->*k.field) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k.name, this->*k.field);
    return s;
}

}  // namespace jitllm
