#include "profile/block_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace jitllm {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double diff(uint64_t t, uint64_t ref) { return double(int64_t(t - ref)); }
// a mark relative to `ref` in ns, NaN when the kernel does not set it
double rel(uint64_t t, uint64_t ref) { return t == 0 ? kNaN : diff(t, ref); }

}  // namespace

BlockTraceReport block_trace_analyze(const std::vector<TraceLaunch>& launches, std::vector<TraceRecord> records) {
    BlockTraceReport r;
    std::sort(records.begin(), records.end(), [](const TraceRecord& a, const TraceRecord& b) {
        return a.id != b.id ? a.id < b.id : a.start != b.start ? a.start < b.start : a.end < b.end;
    });
    r.launch_of.assign(records.size(), -1);
    // each variant's launches in order, and its records' range
    std::map<uint32_t, std::vector<size_t>> by_id;
    for (size_t i = 0; i < launches.size(); ++i) by_id[launches[i].id].push_back(i);
    std::map<uint32_t, std::pair<size_t, size_t>> range;
    for (size_t i = 0; i < records.size(); ++i) {
        auto [it, fresh] = range.try_emplace(records[i].id, i, i + 1);
        if (!fresh) it->second.second = i + 1;
    }
    for (const auto& [id, idx] : by_id) {
        size_t want = 0;
        for (size_t li : idx) want += launches[li].warps;
        const auto it = range.find(id);
        const size_t have = it == range.end() ? 0 : it->second.second - it->second.first;
        if (have != want) {
            r.notes.push_back(fmt::format("{}: {} warp records for {} launches of {} warps", launches[idx[0]].symbol,
                                          have, idx.size(), want));
            continue;
        }
        size_t at = it == range.end() ? 0 : it->second.first;
        for (size_t li : idx)
            for (size_t k = 0; k < launches[li].warps; ++k) r.launch_of[at++] = int(li);
    }
    for (const auto& [id, rg] : range)
        if (!by_id.count(id))
            r.notes.push_back(fmt::format("trace id {}: {} warp records of no launch", id, rg.second - rg.first));

    // per launch: absolute extremes, then relative to the previous launch's last end
    struct Abs {
        bool any = false;
        uint64_t s0 = UINT64_MAX, s1 = 0, w0 = UINT64_MAX, w1 = 0, rd = 0, e0 = UINT64_MAX, e1 = 0;
        double drain = 0;
        size_t n_drain = 0;
    };
    std::vector<Abs> a(launches.size());
    std::vector<uint64_t> stamps;
    for (size_t i = 0; i < records.size(); ++i) {
        const TraceRecord& t = records[i];
        stamps.push_back(t.start);  // start and end always set; the marks when nonzero
        stamps.push_back(t.end);
        for (uint64_t v : {t.wait, t.ready, t.last_issue})
            if (v) stamps.push_back(v);
        if (r.launch_of[i] < 0) continue;
        Abs& x = a[size_t(r.launch_of[i])];
        x.any = true;
        x.s0 = std::min(x.s0, t.start);
        x.s1 = std::max(x.s1, t.start);
        if (t.wait) {
            x.w0 = std::min(x.w0, t.wait);
            x.w1 = std::max(x.w1, t.wait);
        }
        x.rd = std::max(x.rd, t.ready);
        x.e0 = std::min(x.e0, t.end);
        x.e1 = std::max(x.e1, t.end);
        if (t.last_issue) {
            x.drain += double(int64_t(t.end - t.last_issue));
            ++x.n_drain;
        }
    }
    std::sort(stamps.begin(), stamps.end());
    for (size_t i = 1; i < stamps.size(); ++i)
        if (stamps[i] != stamps[i - 1] && (r.timer_step_ns == 0 || stamps[i] - stamps[i - 1] < r.timer_step_ns))
            r.timer_step_ns = stamps[i] - stamps[i - 1];
    uint64_t first = UINT64_MAX, last = 0, prev_end = 0;
    for (size_t li = 0; li < launches.size(); ++li) {
        TraceLaunchStats st;
        st.launch = li;
        const Abs& x = a[li];
        st.matched = x.any;
        if (x.any) {
            first = std::min(first, x.s0);
            last = std::max(last, x.e1);
            const uint64_t ref = prev_end ? prev_end : x.s0;
            st.land_first = diff(x.s0, ref);
            st.land_last = diff(x.s1, ref);
            st.wait_first = x.w1 ? rel(x.w0, ref) : kNaN;
            st.wait_last = x.w1 ? rel(x.w1, ref) : kNaN;
            st.ready_last = rel(x.rd, ref);
            st.drain_mean = x.n_drain ? x.drain / double(x.n_drain) : kNaN;
            st.end_first = diff(x.e0, ref);
            st.end_last = diff(x.e1, ref);
            prev_end = x.e1;
        }
        r.launches.push_back(st);
    }
    r.origin = first == UINT64_MAX ? 0 : first;
    r.step_ns = last > first && first != UINT64_MAX ? double(last - first) : 0.0;
    r.records = std::move(records);
    return r;
}

std::string block_trace_table(const std::vector<TraceLaunch>& launches, const BlockTraceReport& r,
                              double copy_bw_gb_s) {
    struct Row {
        std::string symbol;
        int n = 0;
        double span = 0, land = 0, wait = 0, ready = 0, drain = 0, spread = 0;
        int n_wait = 0, n_ready = 0, n_drain = 0;
        uint64_t bytes = 0;
    };
    std::vector<Row> rows;
    std::map<std::string, size_t> at;
    double spans = 0;
    for (const auto& st : r.launches) {
        if (!st.matched) continue;
        const TraceLaunch& l = launches[st.launch];
        auto [it, fresh] = at.try_emplace(l.symbol, rows.size());
        if (fresh) rows.push_back({l.symbol});
        Row& w = rows[it->second];
        ++w.n;
        w.span += st.end_last;
        spans += st.end_last;
        w.land += st.land_first;
        if (!std::isnan(st.wait_first)) {
            w.wait += st.wait_first;
            ++w.n_wait;
        }
        if (!std::isnan(st.ready_last)) {
            w.ready += st.ready_last;
            ++w.n_ready;
        }
        if (!std::isnan(st.drain_mean)) {
            w.drain += st.drain_mean;
            ++w.n_drain;
        }
        w.spread += st.end_last - st.end_first;
        w.bytes += l.bytes;
    }
    auto us = [](double sum, int n) { return n ? fmt::format("{:.2f}", sum / n / 1e3) : std::string("-"); };
    std::string s = fmt::format("{:<52} {:>4} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6}\n", "kernel (µs: means over launches)",
                                "n", "span", "land", "wait", "ready", "drain", "spread", "GB/s", "%bw");
    for (const Row& w : rows) {
        const double gb_s = w.span > 0 ? double(w.bytes) / w.span : 0.0;  // bytes / ns = GB/s
        s += fmt::format("{:<52} {:>4} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8.0f} {:>6}\n", w.symbol, w.n,
                         us(w.span, w.n), us(w.land, w.n), us(w.wait, w.n_wait), us(w.ready, w.n_ready),
                         us(w.drain, w.n_drain), us(w.spread, w.n), gb_s,
                         copy_bw_gb_s > 0 ? fmt::format("{:.1f}", 100.0 * gb_s / copy_bw_gb_s) : std::string("-"));
    }
    s += fmt::format("step {:.2f} µs (first warp start to last warp end), spans sum {:.2f} µs; timer step {} ns\n",
                     r.step_ns / 1e3, spans / 1e3, r.timer_step_ns);
    s += "span: last warp end - the previous launch's last warp end; land / wait / ready: its first warp start, "
         "first PDL release, last warp's x ready, each after the previous launch's last warp end; drain: last "
         "weight copy issued to warp end; spread: last - first warp end\n";
    for (const auto& n : r.notes) s += "note: " + n + "\n";
    return s;
}

std::string block_trace_csv(const std::vector<TraceLaunch>& launches, const BlockTraceReport& r) {
    std::vector<size_t> order(r.records.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        const int lx = r.launch_of[x], ly = r.launch_of[y];
        if (lx != ly) return (lx < 0 ? INT32_MAX : lx) < (ly < 0 ? INT32_MAX : ly);
        return r.records[x].start < r.records[y].start;
    });
    auto at = [&](uint64_t v) { return fmt::format("{}", int64_t(v - r.origin)); };
    auto t = [&](uint64_t v) { return v ? at(v) : std::string(); };  // a mark: empty when not set
    std::string s = "launch,symbol,layer,trace_id,block,warp,sm,start_ns,wait_ns,ready_ns,last_issue_ns,end_ns\n";
    for (size_t i : order) {
        const TraceRecord& x = r.records[i];
        const int li = r.launch_of[i];
        s += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", li, li >= 0 ? launches[size_t(li)].symbol : "",
                         li >= 0 ? launches[size_t(li)].layer : -1, x.id, x.block, x.warp, x.sm, at(x.start), t(x.wait),
                         t(x.ready), t(x.last_issue), at(x.end));
    }
    return s;
}

}  // namespace jitllm
