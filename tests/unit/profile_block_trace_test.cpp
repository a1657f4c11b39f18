// profile/block_trace: records assigned to launches, per-launch figures relative to the previous
// launch's end, the table and the CSV (host data; the records are written here by hand).
#include "profile/block_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace jitllm {
namespace {

TraceRecord rec(uint32_t id, uint32_t block, uint64_t start, uint64_t wait, uint64_t ready, uint64_t last,
                uint64_t end) {
    TraceRecord r;
    r.id = id;
    r.block = block;
    r.start = start;
    r.wait = wait;
    r.ready = ready;
    r.last_issue = last;
    r.end = end;
    return r;
}

// two launches of a gemv variant (id 1, 2 warps each) around an attention launch (id 2, 1 warp)
std::vector<TraceLaunch> launches() {
    return {{"gemv_a", 0, 1, 2, 2000}, {"attn_b", 0, 2, 1, 0}, {"gemv_a", 1, 1, 2, 2000}};
}

TEST(BlockTrace, AssignsRecordsToLaunchesByStartAndMeasuresFromThePreviousEnd) {
    std::vector<TraceRecord> rs = {
        // second gemv launch first in the input: sorting by start puts it after the first
        rec(1, 0, 1900, 2100, 2200, 2500, 3000), rec(1, 1, 1950, 2100, 2250, 2600, 3100),
        rec(1, 1, 0, 0, 100, 500, 1000), rec(1, 0, 10, 0, 120, 400, 900),
        rec(2, 0, 800, 1100, 1500, 0, 1800),
    };
    const auto ls = launches();
    const BlockTraceReport r = block_trace_analyze(ls, rs);
    ASSERT_TRUE(r.notes.empty());
    ASSERT_EQ(r.launches.size(), 3u);
    EXPECT_EQ(r.origin, 0u);
    EXPECT_DOUBLE_EQ(r.step_ns, 3100.0);
    // launch 0: relative to its own first start
    EXPECT_DOUBLE_EQ(r.launches[0].land_first, 0.0);
    EXPECT_DOUBLE_EQ(r.launches[0].end_last, 1000.0);
    EXPECT_DOUBLE_EQ(r.launches[0].drain_mean, 500.0);  // (1000-500 + 900-400) / 2
    // launch 1 (attention): landed 200 ns before the gemv's last end, released 100 after it
    EXPECT_DOUBLE_EQ(r.launches[1].land_first, -200.0);
    EXPECT_DOUBLE_EQ(r.launches[1].wait_first, 100.0);
    EXPECT_DOUBLE_EQ(r.launches[1].end_last, 800.0);
    EXPECT_TRUE(std::isnan(r.launches[1].drain_mean));
    // launch 2: after attention's end at 1800
    EXPECT_DOUBLE_EQ(r.launches[2].land_first, 100.0);
    EXPECT_DOUBLE_EQ(r.launches[2].land_last, 150.0);
    EXPECT_DOUBLE_EQ(r.launches[2].ready_last, 450.0);
    EXPECT_DOUBLE_EQ(r.launches[2].end_first, 1200.0);
    EXPECT_DOUBLE_EQ(r.launches[2].end_last, 1300.0);
    EXPECT_EQ(r.timer_step_ns, 10u);

    const std::string t = block_trace_table(ls, r, 4000.0);
    EXPECT_NE(t.find("gemv_a"), std::string::npos);
    // gemv_a: spans 1000 and 1300 ns for 4000 bytes: 1.74 GB/s
    EXPECT_NE(t.find("1.15"), std::string::npos) << t;  // mean span 1150 ns
    const std::string csv = block_trace_csv(ls, r);
    // header + 5 rows, launch order: the first gemv's two warps, attention, the second gemv's
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);
    EXPECT_NE(csv.find("\n0,gemv_a,0,1,1,0,0,0,,100,500,1000\n"), std::string::npos) << csv;
    EXPECT_NE(csv.find("\n1,attn_b,0,2,0,0,0,800,1100,1500,,1800\n"), std::string::npos) << csv;
}

TEST(BlockTrace, AVariantWithMissingRecordsIsNamedNotGuessed) {
    std::vector<TraceRecord> rs = {rec(1, 0, 0, 0, 0, 0, 10), rec(1, 1, 0, 0, 0, 0, 10), rec(1, 0, 20, 0, 0, 0, 30),
                                   rec(7, 0, 5, 0, 0, 0, 6)};
    const auto ls = launches();
    const BlockTraceReport r = block_trace_analyze(ls, rs);
    ASSERT_EQ(r.notes.size(), 3u);
    EXPECT_NE(r.notes[0].find("gemv_a: 3 warp records for 2 launches of 4 warps"), std::string::npos) << r.notes[0];
    EXPECT_NE(r.notes[1].find("attn_b: 0 warp records"), std::string::npos) << r.notes[1];
    EXPECT_NE(r.notes[2].find("trace id 7"), std::string::npos) << r.notes[2];
    for (const auto& st : r.launches) EXPECT_FALSE(st.matched);
    for (int l : r.launch_of) EXPECT_EQ(l, -1);
}

}  // namespace
}  // namespace jitllm
