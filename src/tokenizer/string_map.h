// Open-addressing hash map from text to int32 for vocab and merge lookups. Keys are views into
// strings the owner keeps alive and unmoved; no per-entry allocation and 8-byte probe slots, so a
// 150k-token vocab or a 280k-merge list is indexed quickly. Insert-only.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace jitllm::tok {

class StringIdMap {
public:
    void reserve(size_t n) {
        entries_.reserve(n);
        rehash(n);
    }

    // Adds key -> value unless the key is present (the first value wins). Returns whether added.
    bool insert(std::string_view key, int32_t value) {
        if ((entries_.size() + 1) * 2 > slots_.size()) rehash(entries_.size() + 1);
        const uint32_t h = hash(key);
        for (size_t i = h & mask_;; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.index == 0) {
                entries_.push_back({key, value});
                s = {h, uint32_t(entries_.size())};
                return true;
            }
            if (s.hash == h && entries_[s.index - 1].key == key) return false;
        }
    }

    // The value for key, or -1.
    int32_t find(std::string_view key) const {
        if (slots_.empty()) return -1;
        const uint32_t h = hash(key);
        for (size_t i = h & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.index == 0) return -1;
            if (s.hash == h && entries_[s.index - 1].key == key) return entries_[s.index - 1].value;
        }
    }

    size_t size() const { return entries_.size(); }

private:
    struct Slot {
        uint32_t hash = 0;
        uint32_t index = 0;  // 1 + position in entries_; 0 marks an empty slot
    };
    struct Entry {
        std::string_view key;
        int32_t value;
    };

    static uint32_t hash(std::string_view key) {
        return uint32_t(std::hash<std::string_view>{}(key));
    }

    // Capacity: a power of two at least twice the entry count (load factor <= 1/2).
    void rehash(size_t n) {
        size_t cap = 16;
        while (cap < n * 2) cap <<= 1;
        if (cap <= slots_.size()) return;
        slots_.assign(cap, Slot{});
        mask_ = cap - 1;
        for (size_t e = 0; e < entries_.size(); ++e) {
            const uint32_t h = hash(entries_[e].key);
            size_t i = h & mask_;
            while (slots_[i].index != 0) i = (i + 1) & mask_;
            slots_[i] = {h, uint32_t(e + 1)};
        }
    }

    std::vector<Slot> slots_;
    std::vector<Entry> entries_;
    size_t mask_ = 0;
};

}  // namespace jitllm::tok
