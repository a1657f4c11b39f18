// Profiler roll-ups and output formats (see profiler.h).
#include "profile/profiler.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include "core/error.h"

namespace jitllm {
namespace {

std::string json_escape(const std::string& s) {
    std::string o;
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\', o += c;
        else if (static_cast<unsigned char>(c) < 0x20) o += fmt::format("\\u{:04x}", int(c));
        else o += c;
    }
    return o;
}

std::string group_of(const std::string& kernel) {
    const size_t p = kernel.find("__");
    return p == std::string::npos ? kernel : kernel.substr(0, p);
}

void write_file(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary);
        f << text;
        if (!f) fail("{}: cannot write: {}", path, std::strerror(errno));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("{}: cannot write: {}", path, std::strerror(errno));
}

}  // namespace

std::vector<ProfileRow> Profiler::rows() const {
    std::map<std::pair<std::string, std::string>, std::vector<const LaunchRecord*>> by;
    for (const auto& r : records_) by[{r.phase, r.kernel}].push_back(&r);
    std::vector<ProfileRow> out;
    for (auto& [key, recs] : by) {
        ProfileRow row;
        row.phase = key.first;
        row.kernel = key.second;
        row.task_group = group_of(key.second);
        std::vector<double> d;
        for (auto* r : recs) {
            row.launches++;
            row.total_us += r->dur_us;
            row.bytes += r->bytes;
            row.flops += r->flops;
            d.push_back(r->dur_us);
        }
        std::sort(d.begin(), d.end());
        row.mean_us = row.total_us / double(row.launches);
        row.p50_us = d[d.size() / 2];
        row.gb_s = row.total_us > 0 ? double(row.bytes) / (row.total_us * 1e3) : 0;
        row.pct_copy_bw = copy_bw_gb_s_ > 0 ? 100.0 * row.gb_s / copy_bw_gb_s_ : 0;
        row.gflop_s = row.total_us > 0 ? double(row.flops) / (row.total_us * 1e3) : 0;
        out.push_back(row);
    }
    std::sort(out.begin(), out.end(), [](const ProfileRow& a, const ProfileRow& b) {
        return a.phase != b.phase ? a.phase < b.phase : a.total_us > b.total_us;
    });
    return out;
}

std::string Profiler::table() const {
    const auto rs = rows();
    std::string s = fmt::format("\nprofile ({} launches; copy bandwidth {:.0f} GB/s measured on {})\n",
                                records_.size(), copy_bw_gb_s_, device_.empty() ? "?" : device_);
    s += fmt::format("{:<8} {:<46} {:>8} {:>11} {:>9} {:>9} {:>12} {:>9} {:>6} {:>9}\n", "phase", "kernel",
                     "launches", "total_us", "mean_us", "p50_us", "bytes", "GB/s", "%bw", "GFLOP/s");
    std::map<std::string, double> phase_total;
    for (const auto& r : rs) phase_total[r.phase] += r.total_us;
    for (const auto& r : rs)
        s += fmt::format("{:<8} {:<46} {:>8} {:>11.1f} {:>9.2f} {:>9.2f} {:>12} {:>9.1f} {:>6.1f} {:>9.1f}\n",
                         r.phase, r.kernel, r.launches, r.total_us, r.mean_us, r.p50_us, r.bytes, r.gb_s,
                         r.pct_copy_bw, r.gflop_s);
    for (const auto& [ph, us] : phase_total) {
        uint64_t bytes = 0;
        for (const auto& r : rs)
            if (r.phase == ph) bytes += r.bytes;
        const double gbs = us > 0 ? double(bytes) / (us * 1e3) : 0;
        s += fmt::format("{:<8} {:<46} {:>8} {:>11.1f} {:>9} {:>9} {:>12} {:>9.1f} {:>6.1f}\n", ph, "(all kernels)", "",
                         us, "", "", bytes, gbs, copy_bw_gb_s_ > 0 ? 100 * gbs / copy_bw_gb_s_ : 0.0);
    }
    return s;
}

std::string Profiler::json() const {
    std::string s = fmt::format("{{\"format\": \"jitllm-profile-v1\", \"device\": \"{}\", \"copy_bw_gb_s\": {:.3f}, \"kernels\": [",
                                json_escape(device_), copy_bw_gb_s_);
    bool first = true;
    for (const auto& r : rows()) {
        s += fmt::format("{}\n  {{\"phase\": \"{}\", \"kernel\": \"{}\", \"task_group\": \"{}\", \"launches\": {}, "
                         "\"total_us\": {:.3f}, \"mean_us\": {:.3f}, \"p50_us\": {:.3f}, \"bytes\": {}, \"flops\": {}, "
                         "\"gb_s\": {:.3f}, \"pct_copy_bw\": {:.2f}, \"gflop_s\": {:.3f}}}",
                         first ? "" : ",", r.phase, json_escape(r.kernel), json_escape(r.task_group), r.launches,
                         r.total_us, r.mean_us, r.p50_us, r.bytes, r.flops, r.gb_s, r.pct_copy_bw, r.gflop_s);
        first = false;
    }
    return s + "\n]}\n";
}

std::string Profiler::chrome_trace() const {
    // pid 1: GPU track (one slice per launch); pid 2: phase / token / layer ranges above it
    std::string s = "{\"traceEvents\": [\n";
    s += "{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": {\"name\": \"GPU kernels\"}},\n";
    s += "{\"ph\": \"M\", \"pid\": 2, \"name\": \"process_name\", \"args\": {\"name\": \"phase / token / layer\"}}";
    std::map<std::pair<std::string, int>, std::pair<double, double>> tok;    // (phase, token) -> [t0, t1]
    std::map<std::tuple<std::string, int, int>, std::pair<double, double>> lay;
    for (const auto& r : records_) {
        s += fmt::format(",\n{{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"name\": \"{}\", \"ts\": {:.3f}, \"dur\": {:.3f}, "
                         "\"args\": {{\"tasks\": \"{}\", \"bytes\": {}, \"layer\": {}}}}}",
                         json_escape(r.kernel), r.start_us, r.dur_us, json_escape(r.tasks), r.bytes, r.layer);
        auto upd = [&](std::pair<double, double>& p, bool fresh) {
            if (fresh) p = {r.start_us, r.start_us + r.dur_us};
            p.first = std::min(p.first, r.start_us);
            p.second = std::max(p.second, r.start_us + r.dur_us);
        };
        const auto tk = std::make_pair(r.phase, r.token);
        upd(tok[tk], !tok.count(tk) || tok[tk].second == 0);
        if (r.layer >= 0) {
            const auto lk = std::make_tuple(r.phase, r.token, r.layer);
            upd(lay[lk], !lay.count(lk) || lay[lk].second == 0);
        }
    }
    for (const auto& [k, v] : tok)
        s += fmt::format(",\n{{\"ph\": \"X\", \"pid\": 2, \"tid\": 1, \"name\": \"{} {}\", \"ts\": {:.3f}, \"dur\": {:.3f}}}",
                         k.first, k.second, v.first, v.second - v.first);
    for (const auto& [k, v] : lay)
        s += fmt::format(",\n{{\"ph\": \"X\", \"pid\": 2, \"tid\": 2, \"name\": \"blk.{}\", \"ts\": {:.3f}, \"dur\": {:.3f}}}",
                         std::get<2>(k), v.first, v.second - v.first);
    return s + "\n]}\n";
}

void Profiler::dump(const std::string& dir) const {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        fail("--profiler-dump-dir {}: cannot create: {}", dir, std::strerror(errno));
    write_file(dir + "/profile.json", json());
    write_file(dir + "/trace.json", chrome_trace());
}

}  // namespace jitllm
