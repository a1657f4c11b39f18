// quant/ against files quantized by llama-quantize (tests/data/golden/synthetic): every quantized
// tensor dequantizes close to the same tensor of the F32 file, dot_row agrees with the dequantized
// row, and our Q8_0/Q4_0/F16 quantizers reproduce llama-quantize's bytes. Uses its own minimal
// GGUF tensor-table walker, independent of src/gguf.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "fixtures/test_support.h"
#include "quant/quant.h"

namespace jitllm {
namespace {

struct TensorInfo {
    std::string name;
    std::vector<uint64_t> ne;  // ne[0] is the row length
    uint32_t type;
    const uint8_t* data;
};

// Minimal GGUF v2/v3 walker: skips the key-values (keeping general.alignment) and reads the
// tensor table. Throws on anything out of bounds.
class GgufWalk {
public:
    explicit GgufWalk(const std::string& path) : bytes_(test::read_file(path)) {
        if (bytes_.size() < 24 || bytes_.compare(0, 4, "GGUF") != 0)
            throw std::runtime_error(path + ": not a GGUF file");
        pos_ = 4;
        const uint32_t version = u32();
        if (version < 2) throw std::runtime_error(path + ": GGUF version < 2");
        const uint64_t n_tensors = u64(), n_kv = u64();
        uint64_t alignment = 32;
        for (uint64_t i = 0; i < n_kv; ++i) {
            const std::string key = str();
            const uint32_t vt = u32();
            if (key == "general.alignment" && vt == 4) alignment = u32();
            else skip_value(vt);
        }
        std::vector<std::pair<TensorInfo, uint64_t>> infos;
        for (uint64_t i = 0; i < n_tensors; ++i) {
            TensorInfo t;
            t.name = str();
            const uint32_t nd = u32();
            for (uint32_t d = 0; d < nd; ++d) t.ne.push_back(u64());
            t.type = u32();
            infos.emplace_back(t, u64());
        }
        const uint64_t data_start = (pos_ + alignment - 1) / alignment * alignment;
        for (auto& [t, off] : infos) {
            uint64_t n = 1;
            for (auto d : t.ne) n *= d;
            const auto tt = type_traits_find(t.type);
            if (!tt) throw std::runtime_error(t.name + ": unknown type");
            const uint64_t nbytes = n / tt->block_size * tt->type_size;
            if (data_start + off + nbytes > bytes_.size())
                throw std::runtime_error(t.name + ": data past end of file");
            t.data = reinterpret_cast<const uint8_t*>(bytes_.data()) + data_start + off;
            tensors_[t.name] = t;
        }
    }
    const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }

private:
    void need(uint64_t n) {
        if (pos_ + n > bytes_.size()) throw std::runtime_error("GGUF truncated");
    }
    template <class T>
    T get() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    uint32_t u32() { return get<uint32_t>(); }
    uint64_t u64() { return get<uint64_t>(); }
    std::string str() {
        const uint64_t n = u64();
        need(n);
        std::string s = bytes_.substr(pos_, n);
        pos_ += n;
        return s;
    }
    void skip_value(uint32_t vt) {
        // sizes of GGUF value types 0..12; 8 = string, 9 = array
        static const int kSize[13] = {1, 1, 2, 2, 4, 4, 4, 1, -1, -1, 8, 8, 8};
        if (vt > 12) throw std::runtime_error("bad GGUF value type");
        if (vt == 8) {
            str();
        } else if (vt == 9) {
            const uint32_t et = u32();
            const uint64_t count = u64();
            for (uint64_t i = 0; i < count; ++i) skip_value(et);
        } else {
            need(uint64_t(kSize[vt]));
            pos_ += uint64_t(kSize[vt]);
        }
    }

    std::string bytes_;
    uint64_t pos_ = 0;
    std::map<std::string, TensorInfo> tensors_;
};

std::string synth(const std::string& file) {
    return test::data_path("golden/synthetic/" + file);
}

// Bound on the relative RMS error (dequantized vs F32 over a whole tensor and over each
// 16-element slot of the block) for N(0, sigma) weights. A uniform rounding error of step s has
// RMS s/sqrt(12); with s from the block's range (amax of 32 Gaussians ~2.1 sigma, of 16 ~1.8):
//   Q8_0 s = amax/127 -> ~0.5%          Q6_K s = amax/32 (16 per scale) -> ~1.6%
//   Q5_K s = range/31 (32 per scale) -> ~3.5%   Q5_0 s = amax/16 -> ~3.8%
//   Q4_K s = range/15 -> ~7%            Q4_0 s = amax/8 plus saturation -> ~8%
// The bounds leave ~1.5x room. A wrong nibble order, scale packing or high-bit position gives
// errors near 100% or more (decoded values unrelated to the originals), at least in the slots
// it touches, which is why each slot is checked on its own.
double rel_rms_bound(GgmlType t) {
    switch (t) {
        case GgmlType::F16: return 0.001;
        case GgmlType::Q8_0: return 0.01;
        case GgmlType::Q6_K: return 0.03;
        case GgmlType::Q5_K: return 0.055;
        case GgmlType::Q5_0: case GgmlType::Q5_1: return 0.06;
        case GgmlType::Q4_K: return 0.11;
        case GgmlType::Q4_0: case GgmlType::Q4_1: return 0.12;
        default: return 0.0;
    }
}

struct Stats {
    std::map<std::string, int> n_tensors_by_type;
};

// Compares one quantized file with the F32 one. Returns the number of tensors compared per type.
void check_file(const GgufWalk& f32, const std::string& file, Stats* stats) {
    SCOPED_TRACE(file);
    const GgufWalk q(synth(file));
    ASSERT_EQ(q.tensors().size(), f32.tensors().size());
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (const auto& [name, t] : q.tensors()) {
        const auto type = GgmlType(t.type);
        if (type == GgmlType::F32) continue;
        SCOPED_TRACE(name);
        const auto it = f32.tensors().find(name);
        ASSERT_NE(it, f32.tensors().end());
        const TensorInfo& ref = it->second;
        ASSERT_EQ(ref.type, uint32_t(GgmlType::F32));
        ASSERT_EQ(ref.ne, t.ne);
        ASSERT_GT(rel_rms_bound(type), 0.0) << "type " << type_name(type) << " not expected";
        ++stats->n_tensors_by_type[type_name(type)];

        const int64_t cols = int64_t(t.ne[0]);
        int64_t rows = 1;
        for (size_t d = 1; d < t.ne.size(); ++d) rows *= int64_t(t.ne[d]);
        const size_t rb = row_bytes(type, uint64_t(cols));
        const int block = int(type_traits(type).block_size);
        const int n_slots = std::max(1, block / 16);  // 16-element slots of a block
        std::vector<double> e2(n_slots, 0.0), x2(n_slots, 0.0);
        std::vector<float> deq(cols), x(cols);
        const bool requantize = type == GgmlType::Q8_0 || type == GgmlType::Q4_0 ||
                                type == GgmlType::F16;
        std::vector<uint8_t> qbytes(rb);
        int64_t byte_mismatch_rows = 0;
        for (int64_t r = 0; r < rows; ++r) {
            const uint8_t* row = t.data + size_t(r) * rb;
            const float* want = reinterpret_cast<const float*>(ref.data) + r * cols;
            dequantize_row(type, row, deq.data(), cols);
            for (int64_t i = 0; i < cols; ++i) {
                const int slot = int(i % block) / 16 % n_slots;
                e2[slot] += double(deq[i] - want[i]) * double(deq[i] - want[i]);
                x2[slot] += double(want[i]) * double(want[i]);
            }
            // dot_row == dot of the dequantized row, up to float summation order
            for (auto& v : x) v = u(rng);
            double ref_dot = 0.0, mag = 0.0;
            for (int64_t i = 0; i < cols; ++i) {
                ref_dot += double(deq[i]) * double(x[i]);
                mag += std::fabs(double(deq[i]) * double(x[i]));
            }
            const float dot = dot_row(type, row, x.data(), cols);
            ASSERT_NEAR(dot, ref_dot, 2e-6 * mag) << "row " << r;
            // llama-quantize uses ggml's reference quantizer for these types
            if (requantize) {
                std::vector<float> src(want, want + cols);
                quantize_row(type, src.data(), qbytes.data(), cols);
                if (std::memcmp(qbytes.data(), row, rb) != 0) ++byte_mismatch_rows;
            }
        }
        double e_all = 0, x_all = 0;
        for (int s = 0; s < n_slots; ++s) {
            e_all += e2[s];
            x_all += x2[s];
            EXPECT_LT(std::sqrt(e2[s] / x2[s]), rel_rms_bound(type)) << "slot " << s;
        }
        EXPECT_LT(std::sqrt(e_all / x_all), rel_rms_bound(type));
        EXPECT_EQ(byte_mismatch_rows, 0) << "rows whose requantized bytes differ";
    }
}

class QuantFiles : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantFiles, DequantizeMatchesF32File) {
    const std::string arch = GetParam();
    if (!test::file_exists(synth(arch + "-f32.gguf"))) GTEST_SKIP() << "no golden files";
    const GgufWalk f32(synth(arch + "-f32.gguf"));
    Stats stats;
    for (const char* v : {"f16", "q8_0", "q4_0", "q4_k_m", "q5_k_s", "q6_k"})
        check_file(f32, arch + "-" + v + ".gguf", &stats);
    // the files cover every type the README's table lists
    for (const char* t : {"f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K"})
        EXPECT_GT(stats.n_tensors_by_type[t], 0) << t;
}

INSTANTIATE_TEST_SUITE_P(Synthetic, QuantFiles,
                         ::testing::Values("llama", "qwen2", "qwen3", "phi3", "granite"));

}  // namespace
}  // namespace jitllm
