// Access checks on the request head (see guard.h).
#include "serve/guard.h"

#include <arpa/inet.h>

#include <fmt/format.h>

namespace jitllm::serve {

namespace {

bool is_public_path(std::string_view p) {
    return p == "/health" || p == "/v1/health" || p == "/v1/models" || p == "/models" ||
           p.rfind("/v1/models/", 0) == 0;
}

// Compares in time independent of where the strings differ (the key never leaks by timing).
bool same_secret(std::string_view a, std::string_view b) {
    unsigned diff = unsigned(a.size() ^ b.size());
    const size_t n = std::max(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= unsigned(x ^ y);
    }
    return diff == 0;
}

std::string shown(std::string_view s) {
    std::string out;
    for (unsigned char c : s.substr(0, 64)) out += c >= 0x20 && c < 0x7f ? char(c) : '?';
    return out;
}

}  // namespace

bool host_allowed(std::string_view host) {
    std::string name;
    if (!host.empty() && host.front() == '[') {  // [v6]:port
        const size_t close = host.find(']');
        if (close == std::string_view::npos) return false;
        name = std::string(host.substr(1, close - 1));
        in6_addr a6{};
        return inet_pton(AF_INET6, name.c_str(), &a6) == 1;
    }
    name = std::string(host.substr(0, host.find(':')));
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (!name.empty() && name.back() == '.') name.pop_back();
    if (name == "localhost" || (name.size() > 10 && name.compare(name.size() - 10, 10, ".localhost") == 0))
        return true;
    in_addr a4{};
    return inet_pton(AF_INET, name.c_str(), &a4) == 1;
}

bool origin_allowed(std::string_view origin, const std::vector<std::string>& cors_origins) {
    for (const auto& o : cors_origins)
        if (o == "*" || o == origin) return true;
    return false;
}

std::optional<ApiError> check_access(const HttpRequest& req, const GuardOptions& g) {
    if (!g.api_key.empty()) {
        if (is_public_path(req.path())) return std::nullopt;
        const auto auth = req.header("Authorization");
        constexpr std::string_view kBearer = "Bearer ";
        const bool ok = auth && auth->size() > kBearer.size() && iequal(auth->substr(0, kBearer.size()), kBearer) &&
                        same_secret(auth->substr(kBearer.size()), g.api_key);
        if (ok) return std::nullopt;
        return ApiError(401, "authentication_error",
                        auth ? "Authorization: invalid API key"
                             : "Authorization: missing: expected \"Authorization: Bearer <key>\"");
    }
    if (const auto host = req.header("Host"); host && !host_allowed(*host))
        return ApiError(403, "permission_error",
                        fmt::format("Host: {}: not served without --api-key: expected an IP address or localhost "
                                    "(a foreign name may be DNS rebinding)", shown(*host)));
    if (const auto origin = req.header("Origin"); origin && !origin_allowed(*origin, g.cors_origins))
        return ApiError(403, "permission_error",
                        fmt::format("Origin: {}: not allowed: a server without --api-key answers web pages only "
                                    "from the origins given with --cors-origin", shown(*origin)));
    return std::nullopt;
}

void add_cors_headers(const HttpRequest& req, const GuardOptions& g, HttpResponse& res) {
    const auto origin = req.header("Origin");
    if (!origin || !origin_allowed(*origin, g.cors_origins)) return;
    res.header("Access-Control-Allow-Origin", std::string(*origin));
    res.header("Vary", "Origin");
}

bool answer_preflight(const HttpRequest& req, const GuardOptions& g, HttpResponse& res) {
    if (req.method() != "OPTIONS" || !req.header("Access-Control-Request-Method")) return false;
    const auto origin = req.header("Origin");
    if (!origin || !origin_allowed(*origin, g.cors_origins)) return false;
    res.status = 204;
    add_cors_headers(req, g, res);
    res.header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.header("Access-Control-Allow-Headers", "Authorization, Content-Type");
    res.header("Access-Control-Max-Age", "600");
    return true;
}

}  // namespace jitllm::serve
