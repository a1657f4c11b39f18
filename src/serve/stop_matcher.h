// StopMatcher: releases generated text while watching for stop strings that may span token
// boundaries. Text that could be the start of a stop string is held back until the next token
// decides; a found stop string and everything after it are dropped (OpenAI semantics).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jitllm::serve {

class StopMatcher {
public:
    StopMatcher() = default;
    explicit StopMatcher(std::vector<std::string> stops);
    // Appends text; returns what can be released now. After a stop string is found, stopped()
    // is true, the text before it has been released and further pushes return nothing.
    std::string push(std::string_view text);
    // End of generation without a stop: releases whatever was held back.
    std::string flush();
    bool stopped() const { return stopped_; }
    size_t released_bytes() const { return released_; }  // total bytes released so far

private:
    std::vector<std::string> stops_;
    std::string held_;
    size_t released_ = 0;
    bool stopped_ = false;
};

}  // namespace jitllm::serve
