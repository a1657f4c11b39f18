// Unit tests of the request head parser (serve/http_parse.cpp: RFC 9112 framing), the Host/Origin
// guard (serve/guard.cpp) and the body limits of serve/api.cpp: hand-written requests, no sockets.
#include <gtest/gtest.h>

#include <string>

#include "serve/api.h"
#include "serve/guard.h"
#include "serve/http_parse.h"

using namespace jitllm::serve;

namespace {

HeadResult parse(const std::string& s, HttpHead& h) { return parse_head(s, HeadLimits{}, h); }

int status_of(const std::string& s) {
    HttpHead h;
    const HeadResult r = parse(s, h);
    return r.state == HeadState::Error ? r.status : r.state == HeadState::Complete ? 0 : -1;
}

}  // namespace

TEST(HttpParse, CompleteHeadWithBodyLengthAndPipelinedRest) {
    const std::string two = "POST /v1/completions?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"
                            "GET /health HTTP/1.1\r\nHost: a\r\n\r\n";
    HttpHead h;
    const HeadResult r = parse(two, h);
    ASSERT_EQ(r.state, HeadState::Complete);
    EXPECT_EQ(h.method, "POST");
    EXPECT_EQ(h.path, "/v1/completions");
    EXPECT_EQ(h.content_length, 2u);
    EXPECT_TRUE(h.keep_alive);
    EXPECT_EQ(two.substr(r.consumed, 2), "{}");  // the body and the next request stay unread
}

TEST(HttpParse, IncompleteUntilTheBlankLine) {
    EXPECT_EQ(status_of("GET /health HTTP/1.1\r\nHost: a\r\n"), -1);
    EXPECT_EQ(status_of("GET /hea"), -1);
}

TEST(HttpParse, RefusesAmbiguousFraming) {
    EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"), 400);
    EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"), 400);
    EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n"), 400);
    EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"), 400);
    EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"), 411);
    EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"), 400);
    EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"), 400);
    EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost : a\r\n\r\n"), 400);
    EXPECT_EQ(status_of("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"), 400);
    EXPECT_EQ(status_of("GET / HTTP/1.1\r\n\r\n"), 400);                        // no Host
    EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);  // two
    EXPECT_EQ(status_of("GET / HTTP/1.0\r\n\r\n"), 0);                          // 1.0 needs none
    EXPECT_EQ(status_of("GET / HTTP/2.0\r\nHost: a\r\n\r\n"), 505);
    EXPECT_EQ(status_of("GET  / HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
}

TEST(HttpParse, LimitsGiveTheirStatus) {
    EXPECT_EQ(status_of("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n"), 414);
    std::string many = "GET / HTTP/1.1\r\nHost: a\r\n";
    for (int i = 0; i < 120; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
    EXPECT_EQ(status_of(many + "\r\n"), 431);
    EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(40000, 'v')), 431);  // before the line ends
}

TEST(HttpParse, ConnectionAndVersionDecideKeepAlive) {
    HttpHead h;
    ASSERT_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n", h).state, HeadState::Complete);
    EXPECT_FALSE(h.keep_alive);
    ASSERT_EQ(parse("GET / HTTP/1.0\r\n\r\n", h).state, HeadState::Complete);
    EXPECT_FALSE(h.keep_alive);
    ASSERT_EQ(parse("\r\nGET http://x:1/v1/models?a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", h).state,
              HeadState::Complete);
    EXPECT_TRUE(h.keep_alive);
    EXPECT_EQ(h.path, "/v1/models");
}

TEST(Guard, HostsAKeylessServerAnswers) {
    for (const char* ok : {"127.0.0.1", "127.0.0.1:8080", "localhost:8080", "LOCALHOST", "api.localhost",
                           "[::1]:8080", "10.1.2.3", "localhost."})
        EXPECT_TRUE(host_allowed(ok)) << ok;
    for (const char* bad : {"evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io",
                            "[::1", "", "xlocalhost"})
        EXPECT_FALSE(host_allowed(bad)) << bad;
    EXPECT_TRUE(origin_allowed("https://app.example", {"https://app.example"}));
    EXPECT_FALSE(origin_allowed("https://app.example.evil", {"https://app.example"}));
    EXPECT_TRUE(origin_allowed("null", {"*"}));
    EXPECT_FALSE(origin_allowed("https://a", {}));
}

TEST(Body, NulByteAndValueCountAreRefused) {
    const std::string with_nul = std::string("{\"prompt\":\"x\"}") + '\0' + "garbage";
    EXPECT_THROW(parse_body(with_nul), ApiError);
    std::string many = "{\"prompt\":[";
    for (int i = 0; i < 1000; ++i) many += (i ? ",1" : "1");
    many += "]}";
    EXPECT_NO_THROW(parse_body(many, 1002));
    try {
        parse_body(many, 1001);
        FAIL() << "1001 values accepted";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.param, "body");
        EXPECT_NE(e.message.find("too many JSON values"), std::string::npos);
    }
}

TEST(Body, SeedMinusOneIsRandom) {
    json b = {{"prompt", "x"}, {"seed", -1}};
    EXPECT_FALSE(parse_completion(b, Endpoint::Completion, 100).has_seed);
    b["seed"] = -2;
    EXPECT_TRUE(parse_completion(b, Endpoint::Completion, 100).has_seed);
    b["seed"] = 7;
    EXPECT_TRUE(parse_completion(b, Endpoint::Completion, 100).has_seed);
}
