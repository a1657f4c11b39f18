// KvPool, the paged KV cache's bookkeeping: blocks taken as positions need them and given back on
// release (none leaks), promises that keep running sequences from finding the pool empty, prefix
// blocks registered when full and attached by a later sequence with the same tokens (reference
// counted, the least recently released evicted first), and the fixed layout of a backend without
// block tables. Hand-worked pool states throughout.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "runtime/kv_pool.h"

namespace jitllm {
namespace {

std::vector<int32_t> iota(int n, int32_t from = 100) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), from);
    return v;
}

// A sequence's whole life without reuse: grow, append, release.
void fill(KvPool& p, int seq, const std::vector<int32_t>& t) {
    ASSERT_TRUE(p.grow(seq, int(t.size())));
    p.append(seq, t.data(), int(t.size()));
}

TEST(KvPool, blocks_as_positions_need_them_and_back_on_release) {
    KvPool p(8, 4, 3, 4, false);  // 8 blocks of 4 positions, 3 sequences of up to 16 positions
    EXPECT_EQ(p.stats().used, 0);
    EXPECT_TRUE(p.grow(0, 1));
    EXPECT_EQ(p.table(0), (std::vector<int32_t>{0}));
    EXPECT_TRUE(p.grow(1, 5));
    EXPECT_EQ(p.table(1), (std::vector<int32_t>{1, 2}));
    EXPECT_TRUE(p.grow(0, 9));  // interleaved with sequence 1's blocks
    EXPECT_EQ(p.table(0), (std::vector<int32_t>{0, 3, 4}));
    EXPECT_EQ(p.stats().used, 5);
    EXPECT_EQ(p.available(), 3);
    p.release(1);
    EXPECT_EQ(p.stats().used, 3);
    EXPECT_TRUE(p.table(1).empty());
    EXPECT_EQ(p.length(1), 0);
    EXPECT_TRUE(p.grow(1, 16));  // the freed blocks first (the last released on top), then new ones
    EXPECT_EQ(p.table(1), (std::vector<int32_t>{1, 2, 5, 6}));
    EXPECT_TRUE(p.grow(0, 16));
    EXPECT_EQ(p.table(0), (std::vector<int32_t>{0, 3, 4, 7}));
    EXPECT_EQ(p.available(), 0);
    EXPECT_FALSE(p.grow(2, 1));  // the pool is empty: nothing changes
    EXPECT_TRUE(p.table(2).empty());
    p.release(0);
    p.release(1);
    const KvPoolStats st = p.stats();
    EXPECT_EQ(st.used, 0);
    EXPECT_EQ(st.cached, 0);  // nothing appended: no prefix kept
    EXPECT_EQ(p.available(), 8);
}

TEST(KvPool, promises_keep_the_running_sequences_blocks) {
    KvPool p(10, 4, 3, 8, false);
    ASSERT_EQ(p.admit(0, nullptr, 0, 28, true), 0);  // 7 blocks promised
    EXPECT_EQ(p.available(), 3);
    EXPECT_EQ(p.stats().promised, 7);
    EXPECT_EQ(p.admit(1, nullptr, 0, 16, true), -1);  // 4 more: refused, nothing changes
    EXPECT_EQ(p.available(), 3);
    ASSERT_EQ(p.admit(1, nullptr, 0, 12, true), 0);
    EXPECT_EQ(p.available(), 0);
    EXPECT_FALSE(p.grow(2, 1));  // a sequence without a promise finds nothing
    EXPECT_TRUE(p.grow(0, 28));  // within its promise: always there
    EXPECT_TRUE(p.grow(1, 12));
    EXPECT_EQ(p.stats().used, 10);
    EXPECT_EQ(p.stats().promised, 0);
    EXPECT_FALSE(p.grow(1, 13));  // past its promise, the pool is empty
    p.release(0);
    EXPECT_EQ(p.available(), 7);
    EXPECT_TRUE(p.grow(1, 13));  // past the promise from what no promise holds
    p.release(1);
    EXPECT_EQ(p.stats().used, 0);
    EXPECT_EQ(p.available(), 10);
}

TEST(KvPool, full_blocks_of_a_prefix_are_shared) {
    KvPool p(16, 4, 3, 4, false);
    const std::vector<int32_t> a = iota(10);  // 2 full blocks, then 2 tokens
    ASSERT_EQ(p.admit(0, a.data(), 10, 16, true), 0);  // nothing registered yet
    fill(p, 0, a);
    EXPECT_EQ(p.table(0), (std::vector<int32_t>{0, 1, 2}));
    // a second prompt with the same first 9 tokens, then others: the 2 full blocks attached
    std::vector<int32_t> b = iota(9);
    b.push_back(7), b.push_back(8), b.push_back(9);
    EXPECT_EQ(p.admit(1, b.data(), int(b.size()), 16, true), 8);
    EXPECT_EQ(p.table(1), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(p.length(1), 8);
    EXPECT_EQ(p.stats().reused_tokens, 8u);
    EXPECT_EQ(p.stats().used, 3);  // shared blocks count once
    ASSERT_TRUE(p.grow(1, 12));
    EXPECT_EQ(p.table(1), (std::vector<int32_t>{0, 1, 3}));
    p.append(1, b.data() + 8, 4);
    // at most n - 1 positions: a prompt of exactly 8 known tokens attaches 1 block, computes the last 4
    EXPECT_EQ(p.admit(2, a.data(), 8, 8, true), 4);
    p.release(2);
    // a different first token: nothing
    std::vector<int32_t> c = a;
    c[0] = 1;
    EXPECT_EQ(p.admit(2, c.data(), 10, 10, true), 0);
    p.release(2);
    // without reuse: nothing attached
    EXPECT_EQ(p.admit(2, a.data(), 10, 10, false), 0);
    p.release(2);
    p.release(0);
    EXPECT_EQ(p.stats().used, 3);  // sequence 1 still holds 0, 1 and 3
    p.release(1);
    const KvPoolStats st = p.stats();
    EXPECT_EQ(st.used, 0);
    EXPECT_EQ(st.cached, 3);  // blocks 0, 1 (a's prefix) and 3 (b's third block)
    EXPECT_EQ(p.available(), 16);
    // released and cached: still attached by a later sequence
    EXPECT_EQ(p.admit(0, b.data(), int(b.size()), 12, true), 8);  // (b's last block is its last token's)
    p.release(0);
}

TEST(KvPool, the_prefix_released_longest_ago_is_evicted_first) {
    KvPool p(4, 2, 2, 2, false);  // 4 blocks of 2 positions
    const std::vector<int32_t> x = {1, 2, 3, 4}, y = {5, 6, 7, 8};
    fill(p, 0, x);
    fill(p, 1, y);
    p.release(0);  // x's blocks 0 (kept longest), 1
    p.release(1);  // y's blocks 2, 3
    EXPECT_EQ(p.stats().cached, 4);
    // sequence 1 holds x's first block again (so sequence 0 does not run alone, below)
    const std::vector<int32_t> x0 = {1, 2, 0};
    EXPECT_EQ(p.admit(1, x0.data(), 3, 3, true), 2);
    ASSERT_TRUE(p.grow(0, 2));  // evicts x's second block first (released last-first)
    EXPECT_EQ(p.table(0), (std::vector<int32_t>{1}));
    const std::vector<int32_t> z = {9, 9};
    p.append(0, z.data(), 2);
    p.release(0);
    p.release(1);
    std::vector<int32_t> xq = x;
    xq.push_back(0);
    EXPECT_EQ(p.admit(1, xq.data(), 5, 5, true), 2);  // x's first block survived, its second did not
    EXPECT_EQ(p.table(1), (std::vector<int32_t>{0}));
    p.release(1);
    std::vector<int32_t> yq = y;
    yq.push_back(0);
    EXPECT_EQ(p.admit(1, yq.data(), 5, 5, true), 4);  // y untouched
    p.release(1);
}

TEST(KvPool, a_sequence_alone_keeps_the_identity_table) {
    KvPool p(6, 2, 2, 3, false);  // 6 blocks of 2 positions
    const std::vector<int32_t> x = {1, 2, 3, 4, 5}, y = {6, 7, 8, 9};
    fill(p, 1, y);  // blocks 0, 1
    fill(p, 0, x);  // beside sequence 1: the next free ones, 2, 3, 4
    EXPECT_EQ(p.table(0), (std::vector<int32_t>{2, 3, 4}));
    p.release(0);  // block 4 free (partial), 2 and 3 cached
    p.release(1);  // 0 and 1 cached
    EXPECT_EQ(p.stats().cached, 4);
    // alone: blocks 0, 1 and 2 where they are, cached ones given up though 4 and 5 are free and 3
    // was released before 2 (else the table would be 4, 5, 3)
    ASSERT_TRUE(p.grow(0, 6));
    EXPECT_EQ(p.table(0), (std::vector<int32_t>{0, 1, 2}));
    EXPECT_EQ(p.stats().cached, 1);  // x's second block, 3
    p.release(0);
    EXPECT_EQ(p.stats().used, 0);
}

TEST(KvPool, fixed_layout_without_block_tables) {
    KvPool p(6, 4, 2, 3, true);  // sequence s: blocks 3s .. 3s + 2
    const std::vector<int32_t> t = iota(12);
    EXPECT_EQ(p.admit(1, t.data(), 12, 12, true), 0);  // never shared
    ASSERT_TRUE(p.grow(1, 9));
    EXPECT_EQ(p.table(1), (std::vector<int32_t>{3, 4, 5}));
    p.append(1, t.data(), 9);
    ASSERT_TRUE(p.grow(0, 2));
    EXPECT_EQ(p.table(0), (std::vector<int32_t>{0}));
    EXPECT_EQ(p.stats().used, 4);
    p.release(1);
    p.release(0);
    EXPECT_EQ(p.stats().used, 0);
    EXPECT_EQ(p.admit(0, t.data(), 12, 12, true), 0);
}


TEST(KvPool, pool_sized_by_a_share_of_the_free_memory) {
    const uint64_t GiB = uint64_t(1) << 30;
    const uint64_t per_pos = 32 * (1024 + 1024) * 2;  // 32 layers of K and V, 1024 wide each, half floats
    // half of the 6 GiB beside 4 GiB of weights: 3 GiB / 128 KiB = 24576 positions
    EXPECT_EQ(kv_pool_positions_for_memory(10 * GiB, 4 * GiB, 0.5, per_pos, 16, 64 * 1024), 24576);
    // never more than every sequence's whole context (in whole blocks)
    EXPECT_EQ(kv_pool_positions_for_memory(10 * GiB, 4 * GiB, 0.5, per_pos, 16, 10001), 10016);
    // whole blocks only: room for 100 positions is 6 blocks of 16
    EXPECT_EQ(kv_pool_positions_for_memory(4 * GiB + 100 * per_pos, 4 * GiB, 1.0, per_pos, 16, 1 << 20), 96);
    // weights taking all that is free
    EXPECT_EQ(kv_pool_positions_for_memory(4 * GiB, 4 * GiB, 0.9, per_pos, 16, 1 << 20), 0);
    EXPECT_EQ(kv_pool_positions_for_memory(3 * GiB, 4 * GiB, 0.9, per_pos, 16, 1 << 20), 0);
}

}  // namespace
}  // namespace jitllm
