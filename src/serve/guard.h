// Request checks that need only the head: the API key, the Host and Origin of requests to a
// server without a key (a web page in the user's browser must not be able to drive a loopback
// server: DNS rebinding reaches it under a foreign Host, a cross-site form or fetch carries a
// foreign Origin), and opt-in CORS (--cors-origin). Run by the reactor before any body is read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api.h"
#include "serve/http_server.h"

namespace jitllm::serve {

struct GuardOptions {
    std::string api_key;                 // empty: no authentication, Host/Origin checked instead
    std::vector<std::string> cors_origins;  // exact origins, or "*"
};

// Host names a key-less server answers to: IP literals (v4, [v6]) and localhost (*.localhost),
// with an optional port. Any other name may be a rebinding attacker's.
bool host_allowed(std::string_view host);
bool origin_allowed(std::string_view origin, const std::vector<std::string>& cors_origins);

// The first refusal for this head (401 missing/wrong key, 403 foreign Host or Origin), or none.
std::optional<ApiError> check_access(const HttpRequest& req, const GuardOptions& g);
// Access-Control-Allow-Origin (and Vary) for a request whose Origin is allowed.
void add_cors_headers(const HttpRequest& req, const GuardOptions& g, HttpResponse& res);
// Answers a CORS preflight (OPTIONS with Access-Control-Request-Method) from an allowed origin
// with 204; returns false for anything else.
bool answer_preflight(const HttpRequest& req, const GuardOptions& g, HttpResponse& res);

}  // namespace jitllm::serve
