// NVTX ranges (NVTX3, header-only; a no-op unless a tool such as nsys or ncu is attached).
// Colours by phase so a timeline reads at a glance: load/JIT grey, prefill blue, decode green.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace jitllm {

enum class NvtxColor : uint32_t { Load = 0xff808080u, Jit = 0xffa0a0a0u, Prefill = 0xff3070d0u, Decode = 0xff30b050u, Task = 0xffd09030u };

class NvtxRange {
public:
    NvtxRange(const std::string& name, NvtxColor c) {
        nvtxEventAttributes_t a = {};
        a.version = NVTX_VERSION;
        a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        a.colorType = NVTX_COLOR_ARGB;
        a.color = uint32_t(c);
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = name.c_str();
        nvtxRangePushEx(&a);
    }
    ~NvtxRange() { nvtxRangePop(); }
    NvtxRange(const NvtxRange&) = delete;
    NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace jitllm
