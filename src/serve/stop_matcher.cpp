// StopMatcher (see stop_matcher.h).
#include "serve/stop_matcher.h"

#include <algorithm>

namespace jitllm::serve {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
    stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

std::string StopMatcher::push(std::string_view text) {
    if (stopped_) return {};
    held_.append(text);
    // A stop string can only start inside held_: anything released earlier was no prefix of one.
    size_t first = std::string::npos;
    for (const auto& s : stops_) first = std::min(first, held_.find(s));
    if (first != std::string::npos) {
        std::string out = held_.substr(0, first);
        held_.clear();
        stopped_ = true;
        released_ += out.size();
        return out;
    }
    // Hold back the longest suffix that is a proper prefix of some stop string.
    size_t hold = 0;
    for (const auto& s : stops_) {
        for (size_t k = std::min(s.size() - 1, held_.size()); k > hold; --k)
            if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
                hold = k;
                break;
            }
    }
    std::string out = held_.substr(0, held_.size() - hold);
    held_.erase(0, held_.size() - hold);
    released_ += out.size();
    return out;
}

std::string StopMatcher::flush() {
    std::string out;
    out.swap(held_);
    released_ += out.size();
    return out;
}

}  // namespace jitllm::serve
