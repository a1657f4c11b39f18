// The OpenCL lowering of a Plan (cl_schedule.h), inside: one walk over a phase's tasks (decode,
// prefill and the batch phase alike: the batch rows are dimension 1 of every NDRange), the row
// kernels (cl_lowering.cpp) and the products (cl_lowering_gemv.cpp: gemv with its fusions and the
// mixture-of-experts kinds).
#pragma once

#include <string>
#include <vector>

#include "backends/opencl/cl_gates.h"
#include "backends/opencl/cl_schedule.h"

namespace jitllm::cl_lowering {

using K = TaskKind;

// A float literal that round-trips ("0.125f", "1e-05f").
std::string fstr(float f);
// The kernel-side weight type macro: F32 F16 BF16 Q8_0 ... Q4_K
std::string wtype_define(GgmlType t);
// The weight type in a kernel symbol: f32 f16 bf16 q8_0 ... q4_k
std::string type_suffix(GgmlType t);

class Lowering {
public:
    Lowering(const Plan& p, const ClDeviceInfo& d, const ClGates& g, ClSchedule& s, bool fuse)
        : p_(p), c_(*p.config), d_(d), g_(g), s_(s), fuse_(fuse) {}
    void lower(const std::vector<Task>& tasks, std::vector<ClStep>& out, bool batch);

private:
    const Task& t(size_t i) const { return (*tasks_)[i]; }
    bool has(size_t i, K k) const { return i < tasks_->size() && t(i).kind == k && t(i).layer == t(i - 1).layer; }
    size_t lower_at(size_t i);
    // a step covering tasks idx: symbol <group>__<algo>, the gates' defines, rows_mul 1
    ClStep& add(const std::vector<size_t>& idx, const std::string& algo, Variant v);
    static ClArg slot(Slot s) { ClArg a; a.kind = ClArg::Kind::Slot; a.slot = s; return a; }
    static ClArg weight(const WeightTensor* w) {
        ClArg a;
        if (w) { a.kind = ClArg::Kind::Weight; a.w = w; }
        return a;
    }
    static ClArg f32(float f) { ClArg a; a.kind = ClArg::Kind::F32; a.f = f; return a; }
    static ClArg i32(int i) { ClArg a; a.kind = ClArg::Kind::I32; a.i = i; return a; }
    static ClArg scratch(const std::string& n) { ClArg a; a.kind = ClArg::Kind::Scratch; a.scratch = n; return a; }
    static ClArg cache(bool k, int layer) {
        ClArg a;
        a.kind = k ? ClArg::Kind::KCache : ClArg::Kind::VCache;
        a.layer = layer;
        return a;
    }
    static ClArg null() { return {}; }
    static ClArg rows() { ClArg a; a.kind = ClArg::Kind::Rows; return a; }
    int rows_of(Slot s) const { return int(slot_row_elems(p_, s)); }

    // --- row kernels (cl_lowering.cpp) ---
    void embed(size_t i);
    // rms_norm of `heads` vectors of D floats a row (row stride `stride`), in -> out
    void norm(size_t i, Slot in, Slot out, int heads, int D, const WeightTensor* w, float eps);
    void rope(const std::vector<size_t>& idx, bool rotate, bool store);
    void attention(size_t i);
    void residual(size_t i);
    void swiglu(size_t i, Slot g, Slot u, int n);
    void topk(size_t i);
    void sample(size_t i);

    // --- products (cl_lowering_gemv.cpp) ---
    struct Gemv {
        std::vector<const WeightTensor*> w;   // matrices (may name one tensor at several offsets)
        std::vector<uint64_t> w_off;          // byte offsets
        std::vector<int> rows;                // output rows per matrix
        std::vector<const WeightTensor*> bias;
        std::vector<Slot> y;
        std::vector<int> y_off;               // floats into each output row
        Slot x = Slot::Xb;
        int cols = 0;                         // x's length
        const WeightTensor* norm_w = nullptr; // NORM_IN
        float eps = 0;
        int epi = 0;                          // gemv.cl EPI
        float scale = 1.0f;
        int up_offset_rows = 0;
        int experts = 0;                      // EXPERTS: the chosen experts a row
        Slot aux = Slot::X;                   // EPI 1: the residual; 6: the router
        int aux_off = 0;
        Gemv matrix(size_t m) const;  // matrix m alone
        int out_rows() const { return epi == 2 || epi >= 5 ? rows[0] : rows[0] + (rows.size() > 1 ? rows[1] : 0) + (rows.size() > 2 ? rows[2] : 0); }
    };
    void gemv(const std::vector<size_t>& idx, const Gemv& g, const std::string& algo = "gemv");
    int x_tile(const std::vector<size_t>& idx, int cols, int xr, int wg, bool xq) const;
    bool aligned16(const Gemv& g) const;
    void tiled(ClStep& k, GgmlType T, int nw, int out_rows);
    // the matrices of a product task at i (q/k/v, gate/up, output, attn_output, down)
    Gemv product_of(size_t i) const;
    // a product task with the norm before (norm_i, or SIZE_MAX) and what follows folded in; one
    // launch where its matrices share a type, else a launch per matrix (and the norm apart)
    size_t product(size_t norm_i, size_t i);
    // the mixture-of-experts tasks from i (ffn_router .. ffn_shexp_down)
    size_t moe(size_t i);

    const Plan& p_;
    const ModelConfig& c_;
    const ClDeviceInfo& d_;
    const ClGates& g_;
    ClSchedule& s_;
    bool fuse_;
    const std::vector<Task>* tasks_ = nullptr;
    std::vector<ClStep>* out_ = nullptr;
    bool batch_ = false;
};

}  // namespace jitllm::cl_lowering
