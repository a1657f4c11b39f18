// KvPool: the bookkeeping of a paged KV cache, on the host. The cache is one pool of n_blocks
// blocks of block_tokens positions (the backend's K/V rows: Plan::kv_blocks x Plan::kv_block);
// sequence s holds a block table, its positions [b * block_tokens, (b + 1) * block_tokens) living
// in pool block table(s)[b], and only the blocks its positions use.
//
// Prefix reuse: a block full of known tokens is registered under the hash of every token from
// position 0 to its end (a chain: the block's tokens and its predecessor's hash, the tokens kept
// and compared on a match). A new sequence attaches the registered blocks its prompt starts with
// (reference-counted, never written again: a sequence writes only past its own length) instead of
// computing them. A block no sequence holds keeps its prefix until the pool needs it (the least
// recently released first).
//
// Promises: reserve() promises a sequence the blocks its whole length will need, so that running
// sequences never find the pool empty; a new sequence is admitted only when its promise fits
// beside the others'. grow() beyond a promise takes what no promise holds.
//
// A sequence that grows while no other holds blocks takes block b for its positions of block b
// where that block is free or only cached (a cached one given up out of the LRU order): a lone
// sequence keeps the identity table that the single-sequence decode phase reads.
//
// Fixed mode (a backend without block tables): sequence s always has blocks s * per_seq + b, the
// pool is n_seq * per_seq blocks, nothing is shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace jitllm {

struct KvPoolStats {
    int blocks = 0;         // in the pool
    int block_tokens = 0;   // positions a block
    int used = 0;           // held by at least one sequence
    int cached = 0;         // held by none, keeping a reusable prefix
    int promised = 0;       // promised to sequences beyond what they hold
    uint64_t reused_tokens = 0;  // prompt positions attached instead of computed, so far
};

// The positions of a pool sized by device memory: `fraction` of the memory free beside the
// weights, (free_bytes - weight_bytes) x fraction / bytes_per_position, in whole blocks of
// block_tokens, at most max_positions (every sequence its whole context: more is never used).
// 0 when the weights take all that is free.
int64_t kv_pool_positions_for_memory(uint64_t free_bytes, uint64_t weight_bytes, double fraction,
                                     uint64_t bytes_per_position, int block_tokens, int64_t max_positions);

class KvPool {
public:
    // n_blocks blocks of block_tokens positions; n_seq sequences of at most per_seq blocks each.
    KvPool(int n_blocks, int block_tokens, int n_seq, int per_seq, bool fixed);

    int block_tokens() const { return block_tokens_; }
    int n_blocks() const { return n_blocks_; }
    bool fixed() const { return fixed_; }
    int blocks_for(int n_tokens) const { return (n_tokens + block_tokens_ - 1) / block_tokens_; }
    const std::vector<int32_t>& table(int seq) const { return seqs_[size_t(seq)].blocks; }
    int length(int seq) const { return seqs_[size_t(seq)].length; }
    KvPoolStats stats() const;
    // Blocks that a new promise can take now (free or cached, less what is promised).
    int available() const;

    // Starts an empty sequence: with `reuse`, attaches the registered blocks that tokens[0, n)
    // starts with, at most n - 1 positions (the last token is computed for its logits); then
    // promises it the blocks of reserve_tokens positions in all. Returns the positions attached
    // (its length), or -1 when the pool cannot promise that beside the other promises (nothing
    // changes). Fixed mode: 0.
    int admit(int seq, const int32_t* tokens, int n, int reserve_tokens, bool reuse);
    // Promises the sequence the blocks of n_tokens positions in all; false (nothing changes)
    // when the pool cannot beside the other promises.
    bool reserve(int seq, int n_tokens);
    // Blocks for positions [0, n_tokens); false (nothing changes) when the pool has not enough.
    bool grow(int seq, int n_tokens);
    // The tokens at positions length .. length + n - 1, written by the step that just ran: the
    // blocks they fill are registered for reuse.
    void append(int seq, const int32_t* tokens, int n);
    // Gives the sequence's blocks back (its promise too); it starts again at position 0.
    void release(int seq);

private:
    struct Seq {
        std::vector<int32_t> blocks;
        int length = 0;
        int reserved = 0;               // blocks promised in all (held ones included)
        uint64_t hash = 0;              // chain hash of the last full block (kSeed before any)
        std::vector<int32_t> pending;   // tokens of the partial last block
    };
    struct Block {
        int ref = 0;
        bool registered = false;
        uint64_t hash = 0, parent = 0;
        std::vector<int32_t> tokens;
        std::list<int32_t>::iterator lru;  // while cached
    };
    static constexpr uint64_t kSeed = 0x6a09e667f3bcc908ull;
    static uint64_t chain(uint64_t parent, const int32_t* tokens, int n);
    int attach_prefix(int seq, const int32_t* tokens, int n);
    int promised() const;  // over the sequences: blocks promised beyond those held
    int32_t take_block(int32_t prefer);  // prefer: that block where no sequence holds it (-1: none)
    int32_t find(uint64_t parent, const int32_t* tokens) const;

    int n_blocks_, block_tokens_, per_seq_;
    bool fixed_;
    std::vector<Seq> seqs_;
    std::vector<Block> blocks_;
    std::vector<int32_t> free_;   // never registered or unregistered, held by none
    std::list<int32_t> lru_;      // registered, held by none: oldest release first
    std::unordered_map<uint64_t, int32_t> index_;  // chain hash -> block
    int used_ = 0;
    uint64_t reused_tokens_ = 0;
};

}  // namespace jitllm
