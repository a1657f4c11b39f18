// Error conventions (ARCHITECTURE.md, "Errors"): bad input throws jitllm::Error with one sentence
// (subject: what is wrong: expected X, found Y); our own invariants use JITLLM_CHECK, which prints
// file:line and aborts. Nothing below cli/ prints errors or exits.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace jitllm {

class Error : public std::runtime_error {
public:
    enum class Kind { Usage, Input, Device };
    Error(Kind kind, std::string msg) : std::runtime_error(std::move(msg)), kind_(kind) {}
    explicit Error(std::string msg) : Error(Kind::Input, std::move(msg)) {}
    Kind kind() const { return kind_; }

private:
    Kind kind_;
};

// Throws an input error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
    throw Error(Error::Kind::Input, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_usage(fmt::format_string<Args...> f, Args&&... args) {
    throw Error(Error::Kind::Usage, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_device(fmt::format_string<Args...> f, Args&&... args) {
    throw Error(Error::Kind::Device, fmt::format(f, std::forward<Args>(args)...));
}

[[noreturn]] inline void check_failed(const char* file, int line, const char* cond,
                                      const std::string& msg) {
    std::fprintf(stderr, "%s:%d: internal error: check failed: %s%s%s\n", file, line, cond,
                 msg.empty() ? "" : ": ", msg.c_str());
    std::fflush(stderr);
    std::abort();
}

}  // namespace jitllm

// Invariant check for our own bugs (never for bad input): prints file:line and aborts.
#define JITLLM_CHECK(cond, ...)                                                          \
    do {                                                                                 \
        if (!(cond)) ::jitllm::check_failed(__FILE__, __LINE__, #cond,                   \
                                            ::fmt::format("" __VA_ARGS__));              \
    } while (0)

// Runs `call` through the API table `api` (a dlopen'ed driver's) and, where it returns other than
// `success`, calls api.throw_error(text, result): the backends' JITLLM_CUDA_TRY and JITLLM_CL_TRY,
// which pass the call's own text.
#define JITLLM_API_TRY(api, call, text, success)                                   \
    do {                                                                           \
        const auto jitllm_api_r_ = (api).call;                                     \
        if (jitllm_api_r_ != (success)) (api).throw_error(text, jitllm_api_r_);    \
    } while (0)
