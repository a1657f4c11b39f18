// JsonMatcher (see json_schema.h): a stack of frames, one per value being read. Object frames
// step through key, colon, value and comma; arrays through items and commas; strings through
// characters, escapes and UTF-8 sequences; numbers through JSON's number grammar; literals
// (true, false, null, enum and const texts) through their candidate texts. remaining() adds up
// what each frame still needs at the least.
#include <algorithm>
#include <cctype>

#include "runtime/json_schema.h"

namespace jitllm {

namespace {

using Kind = SchemaNode::Kind;
using T = JsonMatcher::Frame::T;

constexpr int kMaxIndent = 20;  // spaces or tabs after a newline between tokens
constexpr int kMaxNumberChars = 24;

enum : uint8_t { kObjKeyOrEnd, kObjKey, kObjColon, kObjValue, kObjCommaOrEnd, kObjKeyStart };
enum : uint8_t { kArrValueOrEnd, kArrValue, kArrCommaOrEnd, kArrValueNext };
enum : uint8_t { kNumMinus, kNumZero, kNumInt, kNumDot, kNumFrac, kNumExp, kNumExpSign, kNumExpDigits };

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool starts_with(const SchemaNode& n, const JsonSchema& s, char c) {
    switch (n.kind) {
        case Kind::Object: return c == '{';
        case Kind::Array: return c == '[';
        case Kind::String: return c == '"';
        case Kind::Number:
        case Kind::Integer: return c == '-' || is_digit(c);
        case Kind::Boolean: return c == 't' || c == 'f';
        case Kind::Null: return c == 'n';
        case Kind::Literals:
            return std::any_of(n.texts.begin(), n.texts.end(), [c](const std::string& t) { return t[0] == c; });
        case Kind::Union:
            return std::any_of(n.alternatives.begin(), n.alternatives.end(),
                               [&](int a) { return starts_with(s.nodes[size_t(a)], s, c); });
    }
    return false;
}

}  // namespace

JsonMatcher::JsonMatcher(std::shared_ptr<const JsonSchema> s) : s_(std::move(s)) {
    Frame f;
    f.node = s_->root;
    stack_.push_back(f);
}

bool JsonMatcher::feed(char c) {
    JsonMatcher next = *this;
    if (!next.step(c)) return false;
    *this = std::move(next);
    return true;
}

bool JsonMatcher::feed(std::string_view text) {
    JsonMatcher next = *this;
    if (!next.advance(text)) return false;
    *this = std::move(next);
    return true;
}

bool JsonMatcher::advance(std::string_view text) {
    for (char c : text)
        if (!step(c)) return false;
    return true;
}

bool JsonMatcher::complete() const {
    if (done_) return true;
    if (stack_.size() != 1) return false;
    const Frame& f = stack_.back();
    if (f.t == T::Number) return f.sub == kNumZero || f.sub == kNumInt || f.sub == kNumFrac || f.sub == kNumExpDigits;
    if (f.t == T::Literal) {
        const auto& texts = s_->nodes[size_t(f.node)].texts;
        return std::find(texts.begin(), texts.end(), f.text) != texts.end();
    }
    return false;
}

void JsonMatcher::pop_value() {
    stack_.pop_back();
    ws_run_ = 0;
    if (stack_.empty()) {
        done_ = true;
        return;
    }
    Frame& p = stack_.back();
    if (p.t == T::Object && p.sub == kObjValue) p.sub = kObjCommaOrEnd;
    else if (p.t == T::Array && p.sub == kArrValue) p.sub = kArrCommaOrEnd;
}

// White space between tokens, as JSON is usually written: one space, or a newline and up to 20
// spaces or tabs of indent.
bool JsonMatcher::space(char c) {
    if (ws_run_ == 0) {
        if (c != ' ' && c != '\n') return false;
        ws_newline_ = c == '\n';
        ws_run_ = 1;
        return true;
    }
    if (!ws_newline_ || (c != ' ' && c != '\t') || ws_run_ > kMaxIndent) return false;
    ++ws_run_;
    return true;
}

bool JsonMatcher::step(char c) {
    if (done_) return space(c);  // only white space after the value
    for (;;) {
        Frame& f = stack_.back();
        Result r = Result::Reject;
        switch (f.t) {
            case T::Value: r = feed_value(f, c); break;
            case T::Object: r = feed_object(f, c); break;
            case T::Array: r = feed_array(f, c); break;
            case T::String: r = feed_string(f, c); break;
            case T::Number: r = feed_number(f, c); break;
            case T::Literal: r = feed_literal(f, c); break;
        }
        if (r != Result::Again) return r == Result::Accept;
        if (done_) return space(c);
    }
}

JsonMatcher::Result JsonMatcher::feed_value(Frame& f, char c) {
    if (is_ws(c)) return space(c) ? Result::Accept : Result::Reject;
    int n = f.node;
    while (s_->nodes[size_t(n)].kind == Kind::Union) {
        const auto& alts = s_->nodes[size_t(n)].alternatives;
        const auto it = std::find_if(alts.begin(), alts.end(),
                                     [&](int a) { return starts_with(s_->nodes[size_t(a)], *s_, c); });
        if (it == alts.end()) return Result::Reject;
        n = *it;
    }
    const SchemaNode& x = s_->nodes[size_t(n)];
    if (!starts_with(x, *s_, c)) return Result::Reject;
    ws_run_ = 0;
    Frame g;
    g.node = n;
    switch (x.kind) {
        case Kind::Object: g.t = T::Object; break;
        case Kind::Array: g.t = T::Array; break;
        case Kind::String: g.t = T::String; break;
        case Kind::Number:
        case Kind::Integer:
            g.t = T::Number;
            g.sub = c == '-' ? kNumMinus : c == '0' ? kNumZero : kNumInt;
            g.count = 1;
            break;
        default:
            g.t = T::Literal;
            g.text = std::string(1, c);
            break;
    }
    f = std::move(g);
    return Result::Accept;
}

bool JsonMatcher::key_possible(const Frame& obj) const {
    const SchemaNode& x = s_->nodes[size_t(obj.node)];
    if (x.additional >= 0) return true;
    for (size_t i = 0; i < x.keys.size(); ++i)
        if (!(obj.used >> i & 1)) return true;
    return false;
}

bool JsonMatcher::required_done(const Frame& obj) const {
    const SchemaNode& x = s_->nodes[size_t(obj.node)];
    for (size_t i = 0; i < x.keys.size(); ++i)
        if (x.required[i] && !(obj.used >> i & 1)) return false;
    return true;
}

JsonMatcher::Result JsonMatcher::feed_object(Frame& f, char c) {
    if (is_ws(c)) return space(c) ? Result::Accept : Result::Reject;
    ws_run_ = 0;
    const uint8_t sub = f.sub;
    if ((sub == kObjKeyOrEnd || sub == kObjKeyStart) && c == '"') {
        if (!key_possible(f)) return Result::Reject;
        f.sub = kObjKey;
        Frame k;
        k.t = T::String;
        k.key = true;
        k.node = f.node;
        stack_.push_back(std::move(k));
        return Result::Accept;
    }
    if ((sub == kObjKeyOrEnd || sub == kObjCommaOrEnd) && c == '}') {
        if (!required_done(f)) return Result::Reject;
        pop_value();
        return Result::Accept;
    }
    if (sub == kObjCommaOrEnd && c == ',') {
        if (!key_possible(f)) return Result::Reject;
        f.sub = kObjKeyStart;
        return Result::Accept;
    }
    if (sub == kObjColon && c == ':') {
        const SchemaNode& x = s_->nodes[size_t(f.node)];
        f.sub = kObjValue;
        Frame v;
        v.node = f.member >= 0 ? x.values[size_t(f.member)] : x.additional;
        stack_.push_back(std::move(v));
        return Result::Accept;
    }
    return Result::Reject;
}

JsonMatcher::Result JsonMatcher::feed_array(Frame& f, char c) {
    if (is_ws(c)) return space(c) ? Result::Accept : Result::Reject;
    const SchemaNode& x = s_->nodes[size_t(f.node)];
    if ((f.sub == kArrValueOrEnd || f.sub == kArrCommaOrEnd) && c == ']') {
        if (f.count < x.min_items) return Result::Reject;
        pop_value();
        return Result::Accept;
    }
    if (f.sub == kArrCommaOrEnd) {
        if (c != ',' || (x.max_items >= 0 && f.count >= x.max_items)) return Result::Reject;
        ws_run_ = 0;
        f.sub = kArrValueNext;
        return Result::Accept;
    }
    if (x.max_items == 0) return Result::Reject;
    f.count++;  // kArrValueOrEnd or kArrValueNext: an item starts with c
    f.sub = kArrValue;
    Frame v;
    v.node = x.items;
    stack_.push_back(std::move(v));
    return Result::Again;
}

}  // namespace jitllm

namespace jitllm {

std::vector<int> JsonMatcher::key_candidates(const Frame& obj, const std::string& prefix) const {
    const SchemaNode& x = s_->nodes[size_t(obj.node)];
    std::vector<int> out;
    for (size_t i = 0; i < x.keys.size(); ++i)
        if (!(obj.used >> i & 1) && x.keys[i].compare(0, prefix.size(), prefix) == 0) out.push_back(int(i));
    return out;
}

// The key string closed: the object takes the property (or another key where allowed).
JsonMatcher::Result JsonMatcher::close_key(Frame& k) {
    Frame& obj = stack_[stack_.size() - 2];
    const SchemaNode& x = s_->nodes[size_t(obj.node)];
    int member = -1;
    for (int i : key_candidates(obj, k.text))
        if (x.keys[size_t(i)] == k.text) member = i;
    if (member < 0) {
        // another key: allowed where the schema takes any, never a declared one again
        if (x.additional < 0 || std::find(x.keys.begin(), x.keys.end(), k.text) != x.keys.end())
            return Result::Reject;
        member = -2;
    } else {
        obj.used |= uint64_t(1) << member;
    }
    obj.member = member;
    obj.sub = kObjColon;
    stack_.pop_back();
    return Result::Accept;
}

JsonMatcher::Result JsonMatcher::feed_string(Frame& f, char c) {
    const auto u = uint8_t(c);
    const SchemaNode& x = s_->nodes[size_t(f.node)];
    const int max_len = f.key ? -1 : x.max_length;
    if (f.escape == 1) {
        if (c == 'u') {
            f.escape = 2;
            return Result::Accept;
        }
        if (std::string_view("\"\\/bfnrt").find(c) == std::string_view::npos) return Result::Reject;
        f.escape = 0;
        f.count++;
        return Result::Accept;
    }
    if (f.escape >= 2) {
        if (!std::isxdigit(u)) return Result::Reject;
        if (++f.escape == 6) {
            f.escape = 0;
            f.count++;
        }
        return Result::Accept;
    }
    if (f.utf8_need > 0) {
        if ((u & 0xC0) != 0x80) return Result::Reject;
        f.utf8_need--;
    } else if (c == '"') {
        if (f.key) return close_key(f);
        if (f.count < x.min_length) return Result::Reject;
        pop_value();
        return Result::Accept;
    } else if (c == '\\') {
        if (f.key || (max_len >= 0 && f.count >= max_len)) return Result::Reject;
        f.escape = 1;
        return Result::Accept;
    } else if (u < 0x20) {
        return Result::Reject;
    } else {
        if (u >= 0x80) {
            if (u < 0xC2 || u > 0xF4) return Result::Reject;
            f.utf8_need = u < 0xE0 ? 1 : u < 0xF0 ? 2 : 3;
        }
        if (max_len >= 0 && f.count >= max_len) return Result::Reject;
        f.count++;
    }
    if (f.key) {  // the key so far must begin a property name (or be any name where any is taken)
        f.text += c;
        const Frame& obj = stack_[stack_.size() - 2];
        if (s_->nodes[size_t(obj.node)].additional < 0 && key_candidates(obj, f.text).empty()) return Result::Reject;
    }
    return Result::Accept;
}

JsonMatcher::Result JsonMatcher::feed_number(Frame& f, char c) {
    const bool integer = s_->nodes[size_t(f.node)].kind == Kind::Integer;
    const bool room = f.count < kMaxNumberChars;
    uint8_t next = 0xFF;
    switch (f.sub) {
        case kNumMinus: next = c == '0' ? kNumZero : is_digit(c) ? kNumInt : 0xFF; break;
        case kNumZero:
        case kNumInt:
            if (f.sub == kNumInt && is_digit(c)) next = kNumInt;
            else if (c == '.' && !integer) next = kNumDot;
            else if ((c == 'e' || c == 'E') && !integer) next = kNumExp;
            break;
        case kNumDot: next = is_digit(c) ? kNumFrac : 0xFF; break;
        case kNumFrac: next = is_digit(c) ? kNumFrac : (c == 'e' || c == 'E') ? kNumExp : 0xFF; break;
        case kNumExp: next = (c == '+' || c == '-') ? kNumExpSign : is_digit(c) ? kNumExpDigits : 0xFF; break;
        case kNumExpSign:
        case kNumExpDigits: next = is_digit(c) ? kNumExpDigits : 0xFF; break;
    }
    if (next != 0xFF && room) {
        f.sub = next;
        f.count++;
        return Result::Accept;
    }
    const bool accepting = f.sub == kNumZero || f.sub == kNumInt || f.sub == kNumFrac || f.sub == kNumExpDigits;
    if (!accepting) return Result::Reject;
    pop_value();  // the number ended; c belongs to what follows
    return Result::Again;
}

JsonMatcher::Result JsonMatcher::feed_literal(Frame& f, char c) {
    const auto& texts = s_->nodes[size_t(f.node)].texts;
    const std::string longer = f.text + c;
    for (const auto& t : texts)
        if (t.compare(0, longer.size(), longer) == 0) {
            f.text = longer;
            return Result::Accept;
        }
    if (std::find(texts.begin(), texts.end(), f.text) == texts.end()) return Result::Reject;
    pop_value();  // the literal ended (a number of an enum); c belongs to what follows
    return Result::Again;
}

bool JsonMatcher::in_plain_string(int* count, int* min_length, int* max_length) const {
    if (done_ || stack_.empty()) return false;
    const Frame& f = stack_.back();
    if (f.t != T::String || f.escape || f.utf8_need) return false;
    if (f.key) {  // a key matters only where the object declares keys
        const SchemaNode& obj = s_->nodes[size_t(stack_[stack_.size() - 2].node)];
        if (obj.additional < 0 || !obj.keys.empty()) return false;
        *count = f.count, *min_length = 0, *max_length = -1;
        return true;
    }
    const SchemaNode& x = s_->nodes[size_t(f.node)];
    *count = f.count, *min_length = x.min_length, *max_length = x.max_length;
    return true;
}

// ---- the fewest characters still needed ----

int JsonMatcher::remaining() const {
    if (done_) return 0;
    int sum = 0;
    for (size_t i = 0; i < stack_.size(); ++i) sum += frame_cost(i);
    return sum;
}

// Required properties not given yet (other than `skip`), each with its comma.
int JsonMatcher::missing_cost(const Frame& f, int skip) const {
    const SchemaNode& x = s_->nodes[size_t(f.node)];
    int sum = 0;
    for (size_t i = 0; i < x.keys.size(); ++i)
        if (x.required[i] && !(f.used >> i & 1) && int(i) != skip)
            sum += 1 + int(x.keys[i].size()) + 3 + s_->nodes[size_t(x.values[i])].min_len;
    return sum;
}

int JsonMatcher::object_cost(size_t i) const {
    const Frame& f = stack_[i];
    const SchemaNode& x = s_->nodes[size_t(f.node)];
    const int missing = missing_cost(f, -1);
    auto value_len = [&](int member) {
        return s_->nodes[size_t(member >= 0 ? x.values[size_t(member)] : x.additional)].min_len;
    };
    switch (f.sub) {
        case kObjKeyOrEnd: return missing == 0 ? 1 : missing - 1 + 1;  // the first member has no comma
        case kObjKey: {  // key, closing quote, colon, value, then the rest
            const std::string& typed = stack_[i + 1].text;
            int best = 1 << 24;
            for (int k : key_candidates(f, typed))
                best = std::min(best, int(x.keys[size_t(k)].size() - typed.size()) + 2 + value_len(k) +
                                          missing_cost(f, k) + 1);
            if (x.additional >= 0) best = std::min(best, 2 + value_len(-2) + missing + 1);
            return best;
        }
        case kObjColon: return 1 + value_len(f.member) + missing + 1;
        case kObjValue:
        case kObjCommaOrEnd: return missing + 1;
        default: {  // kObjKeyStart: a member must follow the comma
            if (missing > 0) return missing - 1 + 1;
            int best = x.additional >= 0 ? 3 + value_len(-2) : 1 << 24;
            for (size_t k = 0; k < x.keys.size(); ++k)
                if (!(f.used >> k & 1)) best = std::min(best, int(x.keys[k].size()) + 3 + value_len(int(k)));
            return best + 1;
        }
    }
}

int JsonMatcher::frame_cost(size_t i) const {
    const Frame& f = stack_[i];
    const SchemaNode& x = s_->nodes[size_t(f.node)];
    switch (f.t) {
        case T::Value: return x.min_len;
        case T::Object: return object_cost(i);
        case T::Array: {
            const int ml = s_->nodes[size_t(x.items)].min_len;
            const int more = std::max(0, x.min_items - f.count);
            if (f.sub == kArrValueOrEnd) return x.min_items == 0 ? 1 : x.min_items * (ml + 1);
            if (f.sub == kArrValueNext) return ml + std::max(0, more - 1) * (1 + ml) + 1;
            return more * (1 + ml) + 1;
        }
        case T::String: {
            if (f.key) return 0;  // the object counts its key
            const int pending = f.utf8_need + (f.escape == 1 ? 1 : f.escape >= 2 ? 6 - f.escape : 0);
            return pending + std::max(0, x.min_length - f.count - (f.escape ? 1 : 0)) + 1;
        }
        case T::Number:
            return f.sub == kNumMinus || f.sub == kNumDot || f.sub == kNumExp || f.sub == kNumExpSign ? 1 : 0;
        case T::Literal: {
            int best = 1 << 24;
            for (const auto& t : x.texts)
                if (t.compare(0, f.text.size(), f.text) == 0) best = std::min(best, int(t.size() - f.text.size()));
            return best;
        }
    }
    return 0;
}

}  // namespace jitllm
