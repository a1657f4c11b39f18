// Tunables: the CUDA lowering's alternatives to its defaults, set by `--tune KEY=VALUE` (repeatable)
// and listed by `jitllm plan --list-tunables`. One table: each key names what it tunes, its default,
// the ScheduleOptions field it sets and the values it accepts.
//
// A value the key does not accept is refused: "tune KEY: expected ..., found ...".
//
// Key scheme: <part>.<knob> for a knob of every kernel of that part (gemv.block=256, attn.chunk=64),
// <part>.<knob>.<task kind> for one kernel, the one whose first task is of that kind
// (gemv.grid.attn_output=76: the gemv kernel starting with attn_output on at most 76 blocks).
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "backends/cuda/schedule.h"

namespace jitllm {

// What a key accepts: an integer from lo to hi, one of `only`, or one of `words` (its index); "auto"
// gives `automatic` where the key has an automatic choice (kNoAuto: it has none).
constexpr int kNoAuto = -1000;
struct TuneValues {
    int lo = 0, hi = 0;
    std::vector<int> only;
    std::vector<std::string> words;
    int automatic = kNoAuto;
};

struct Tunable {
    const char* key;   // e.g. "gemv.block", or "gemv.grid.KIND" for a per-kernel knob
    const char* dflt;  // the default, as text
    const char* help;  // one line: what it changes
    // the option it sets: an integer, a switch (words off / on), or a per-kernel integer by task kind
    std::variant<int ScheduleOptions::*, bool ScheduleOptions::*, std::map<std::string, int> ScheduleOptions::*> field;
    TuneValues values;
};

const std::vector<Tunable>& tunables();

// Applies one "KEY=VALUE" to `o`; an unknown key is refused with the close keys, a bad value with
// what the key expects.
void tune_apply(ScheduleOptions& o, const std::string& key_value);

// Every tunable as "key  default  help" lines (jitllm plan --list-tunables).
std::string tunables_list();

}  // namespace jitllm
