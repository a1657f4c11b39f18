// Test helpers of tests/opencl: device descriptions without a device, and a model with its plan.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "backends/opencl/cl_schedule.h"
#include "fixtures/test_support.h"
#include "model/model.h"

namespace jitllm::test {

inline ClDeviceInfo device(std::set<std::string> ext, const std::string& c_std = "CL1.2") {
    ClDeviceInfo d;
    d.name = "test device";
    d.c_std = c_std;
    d.extensions = std::move(ext);
    d.max_work_group = 1024;
    d.local_mem = 48 << 10;
    d.max_alloc = uint64_t(1) << 32;
    return d;
}

// NVIDIA's driver as it reports itself: OpenCL C 3.0, cl_nv_device_attribute_query's warp size
// and compute capability, no sub-groups, no cl_khr_fp16
inline ClDeviceInfo nv_device(uint32_t cc = 90) {
    ClDeviceInfo d = device({"cl_nv_device_attribute_query", "cl_khr_fp64"}, "CL3.0");
    d.name = "NVIDIA test device";
    d.nv_warp = 32;
    d.nv_cc = cc;
    return d;
}

// a variant's define (empty where it has none)
inline std::string define_of(const Variant& v, const std::string& name) {
    for (const auto& [k, val] : v.defines)
        if (k == name) return val;
    return "";
}

inline std::string gate(const ClSchedule& s, const std::string& name) {
    for (const auto& g : s.gates)
        if (g.gate == name) return g.chosen;
    return "?";
}

struct Loaded {
    std::unique_ptr<Model> model;
    Plan plan;
    explicit Loaded(const std::string& path, int batch_rows = 0) : model(load_model(path)) {
        PlanOptions po;
        po.n_ctx = 64;
        po.batch_rows = batch_rows;
        po.n_seq = batch_rows > 0 ? 2 : 1;
        plan = plan_build(*model, po);
    }
};

inline std::string stories() { return test::source_dir() + "/models/stories260K.gguf"; }

}  // namespace jitllm::test
