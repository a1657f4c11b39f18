// Tunables: the CUDA lowering's alternatives to its defaults, set by `--tune KEY=VALUE` (repeatable)
// and listed by `jitllm plan --list-tunables`. One table: each key names what it tunes, its default,
// and a setter that validates the value into ScheduleOptions.
//
// Key scheme: <part>.<knob> for a knob of every kernel of that part (gemv.block=256, attn.chunk=64),
// <part>.<knob>.<task kind> for one kernel, the one whose first task is of that kind
// (gemv.grid.attn_output=76: the gemv kernel starting with attn_output on at most 76 blocks).
#pragma once

#include <string>
#include <vector>

#include "backends/cuda/schedule.h"

namespace jitllm {

struct Tunable {
    const char* key;   // e.g. "gemv.block", or "gemv.grid.KIND" for a per-kernel knob
    const char* dflt;  // the default, as text
    const char* help;  // one line: what it changes
    // sets the option from `value` (for a per-kernel key, `kind` is the task kind after the knob);
    // throws jitllm::Error (usage) "tune KEY: expected ..., found ..." on a bad value
    void (*set)(ScheduleOptions& o, const std::string& key, const std::string& kind, const std::string& value);
};

const std::vector<Tunable>& tunables();

// Applies one "KEY=VALUE" to `o`; an unknown key is refused with the close keys, a bad value with
// what the key expects.
void tune_apply(ScheduleOptions& o, const std::string& key_value);

// Every tunable as "key  default  help" lines (jitllm plan --list-tunables).
std::string tunables_list();

}  // namespace jitllm
