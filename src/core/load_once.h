// A process-wide object made on first use, such as a dlopen'ed API table: made once (thread-safe)
// or, where making it failed, the failure's sentence kept for every caller.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"

namespace jitllm {

// The T that make() returns (a std::unique_ptr<T>), made by the first call; nullptr, and the
// sentence of the Error make() threw in *why (when why is set), where that failed. One object per
// call site: each site's make is a lambda of its own type.
template <class T, class Make>
const T* load_once(std::string* why, Make make) {
    static std::once_flag once;
    static std::unique_ptr<T> obj;
    static std::string error;
    std::call_once(once, [&] {
        try {
            obj = make();
        } catch (const Error& e) {
            error = e.what();
        }
    });
    if (!obj && why) *why = error;
    return obj.get();
}

// try_load's object, or its sentence thrown as a device Error.
template <class T>
const T& load_or_throw(const T* (*try_load)(std::string*)) {
    std::string why;
    const T* obj = try_load(&why);
    if (!obj) throw Error(Error::Kind::Device, why);
    return *obj;
}

}  // namespace jitllm
