// KvPool (see kv_pool.h).
#include "runtime/kv_pool.h"

#include <algorithm>

#include "core/error.h"

namespace jitllm {

int64_t kv_pool_positions_for_memory(uint64_t free_bytes, uint64_t weight_bytes, double fraction,
                                     uint64_t bytes_per_position, int block_tokens, int64_t max_positions) {
    JITLLM_CHECK(fraction > 0.0 && fraction <= 1.0 && bytes_per_position > 0 && block_tokens > 0,
                 "kv pool sizing: fraction {}, {} bytes a position, blocks of {}", fraction, bytes_per_position,
                 block_tokens);
    if (free_bytes <= weight_bytes) return 0;
    const double bytes = double(free_bytes - weight_bytes) * fraction;
    const int64_t blocks = int64_t(bytes / double(bytes_per_position * uint64_t(block_tokens)));
    const int64_t cap = (max_positions + block_tokens - 1) / block_tokens * block_tokens;
    return std::min(blocks * block_tokens, cap);
}

KvPool::KvPool(int n_blocks, int block_tokens, int n_seq, int per_seq, bool fixed)
    : n_blocks_(n_blocks), block_tokens_(block_tokens), per_seq_(per_seq), fixed_(fixed) {
    JITLLM_CHECK(block_tokens >= 1 && n_seq >= 1 && per_seq >= 1 && n_blocks >= per_seq,
                 "kv pool: {} blocks of {}, {} sequences of {} blocks", n_blocks, block_tokens, n_seq, per_seq);
    JITLLM_CHECK(!fixed || int64_t(n_blocks) == int64_t(n_seq) * per_seq, "fixed kv pool: {} blocks for {} x {}",
                 n_blocks, n_seq, per_seq);
    seqs_.resize(size_t(n_seq));
    for (auto& s : seqs_) s.hash = kSeed;
    blocks_.resize(size_t(n_blocks));
    if (!fixed)
        for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);  // block 0 taken first
}

uint64_t KvPool::chain(uint64_t parent, const int32_t* tokens, int n) {
    // splitmix64's finaliser over the parent's hash and each token in turn
    auto mix = [](uint64_t z) {
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    };
    uint64_t h = mix(parent + 0x9e3779b97f4a7c15ull);
    for (int i = 0; i < n; ++i) h = mix(h ^ (uint64_t(uint32_t(tokens[i])) + 0x9e3779b97f4a7c15ull * uint64_t(i + 1)));
    return h;
}

int KvPool::promised() const {
    int n = 0;
    for (const auto& s : seqs_) n += std::max(0, s.reserved - int(s.blocks.size()));
    return n;
}

int KvPool::available() const {
    if (fixed_) return 0;
    return int(free_.size() + lru_.size()) - promised();
}

KvPoolStats KvPool::stats() const {
    KvPoolStats st;
    st.blocks = n_blocks_;
    st.block_tokens = block_tokens_;
    st.used = used_;
    st.cached = int(lru_.size());
    st.promised = fixed_ ? 0 : promised();
    st.reused_tokens = reused_tokens_;
    return st;
}

int32_t KvPool::find(uint64_t parent, const int32_t* tokens) const {
    const auto it = index_.find(chain(parent, tokens, block_tokens_));
    if (it == index_.end()) return -1;
    const Block& b = blocks_[size_t(it->second)];
    if (b.parent != parent || !std::equal(b.tokens.begin(), b.tokens.end(), tokens)) return -1;
    return it->second;
}

int KvPool::attach_prefix(int seq, const int32_t* tokens, int n) {
    Seq& s = seqs_[size_t(seq)];
    if (fixed_ || n < 1) return 0;
    const int max_blocks = std::min((n - 1) / block_tokens_, per_seq_);
    for (int i = 0; i < max_blocks; ++i) {
        const int32_t id = find(s.hash, tokens + size_t(i) * size_t(block_tokens_));
        if (id < 0) break;
        Block& b = blocks_[size_t(id)];
        if (b.ref++ == 0) {
            lru_.erase(b.lru);
            ++used_;
        }
        s.blocks.push_back(id);
        s.hash = b.hash;
        s.length += block_tokens_;
    }
    return s.length;
}

int KvPool::admit(int seq, const int32_t* tokens, int n, int reserve_tokens, bool reuse) {
    const Seq& s = seqs_[size_t(seq)];
    JITLLM_CHECK(s.blocks.empty() && s.length == 0, "kv pool: sequence {} admitted while holding blocks", seq);
    const int attached = reuse ? attach_prefix(seq, tokens, n) : 0;
    if (!reserve(seq, std::max(reserve_tokens, attached))) {
        release(seq);  // the attached blocks go back to the cache
        return -1;
    }
    reused_tokens_ += uint64_t(attached);
    return attached;
}

bool KvPool::reserve(int seq, int n_tokens) {
    Seq& s = seqs_[size_t(seq)];
    const int want = std::min(blocks_for(n_tokens), per_seq_);
    if (fixed_) {
        s.reserved = want;
        return true;
    }
    const int more = std::max(0, want - int(s.blocks.size())) - std::max(0, s.reserved - int(s.blocks.size()));
    if (more > available()) return false;
    s.reserved = want;
    return true;
}

int32_t KvPool::take_block(int32_t prefer) {
    int32_t id;
    const bool unheld = prefer >= 0 && prefer < n_blocks_ && blocks_[size_t(prefer)].ref == 0;
    if (unheld && !blocks_[size_t(prefer)].registered) {  // free: out of free_
        id = prefer;
        free_.erase(std::find(free_.begin(), free_.end(), id));
    } else if (unheld) {  // cached: its prefix given up before the least recent one's
        id = prefer;
        Block& b = blocks_[size_t(id)];
        lru_.erase(b.lru);
        index_.erase(b.hash);
        b.registered = false;
        b.tokens.clear();
    } else if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
    } else {
        JITLLM_CHECK(!lru_.empty(), "kv pool: no block to take");
        id = lru_.front();  // the prefix released longest ago gives its block up
        lru_.pop_front();
        Block& b = blocks_[size_t(id)];
        index_.erase(b.hash);
        b.registered = false;
        b.tokens.clear();
    }
    blocks_[size_t(id)].ref = 1;
    ++used_;
    return id;
}

bool KvPool::grow(int seq, int n_tokens) {
    Seq& s = seqs_[size_t(seq)];
    const int want = blocks_for(n_tokens);
    JITLLM_CHECK(want <= per_seq_, "kv pool: sequence {} wants {} blocks, at most {}", seq, want, per_seq_);
    const int need = want - int(s.blocks.size());
    if (need <= 0) return true;
    if (fixed_) {
        while (int(s.blocks.size()) < want) s.blocks.push_back(int32_t(seq * per_seq_ + int(s.blocks.size())));
        used_ += need;
        return true;
    }
    const int own = std::max(0, s.reserved - int(s.blocks.size()));  // promised to this sequence
    if (need > own && need - own > available()) return false;
    // a sequence running alone takes block b for its positions of block b where no one holds it:
    // its table stays the identity, the layout the single-sequence decode phase reads (slots.h)
    bool alone = true;
    for (size_t q = 0; q < seqs_.size() && alone; ++q) alone = int(q) == seq || seqs_[q].blocks.empty();
    for (int i = 0; i < need; ++i) s.blocks.push_back(take_block(alone ? int32_t(s.blocks.size()) : -1));
    return true;
}

void KvPool::append(int seq, const int32_t* tokens, int n) {
    Seq& s = seqs_[size_t(seq)];
    JITLLM_CHECK(blocks_for(s.length + n) <= int(s.blocks.size()), "kv pool: sequence {} writes past its blocks", seq);
    for (int i = 0; i < n; ++i) {
        s.pending.push_back(tokens[i]);
        ++s.length;
        if (int(s.pending.size()) < block_tokens_) continue;
        // a full block: registered for reuse unless its prefix already has a block
        const uint64_t h = chain(s.hash, s.pending.data(), block_tokens_);
        const int32_t id = s.blocks[size_t(s.length / block_tokens_ - 1)];
        if (!fixed_ && !index_.count(h)) {
            Block& b = blocks_[size_t(id)];
            b.registered = true;
            b.hash = h;
            b.parent = s.hash;
            b.tokens = s.pending;
            index_[h] = id;
        }
        s.hash = h;
        s.pending.clear();
    }
}

void KvPool::release(int seq) {
    Seq& s = seqs_[size_t(seq)];
    if (fixed_) used_ -= int(s.blocks.size());
    if (!fixed_) {
        // the last blocks first: a prefix's first blocks stay cached the longest
        for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) {
            Block& b = blocks_[size_t(*it)];
            JITLLM_CHECK(b.ref > 0, "kv pool: block {} released twice", *it);
            if (--b.ref > 0) continue;
            --used_;
            if (b.registered) {
                lru_.push_back(*it);
                b.lru = std::prev(lru_.end());
            } else {
                free_.push_back(*it);
            }
        }
    }
    s = Seq{};
    s.hash = kSeed;
}

}  // namespace jitllm
