// generate() with a constraint (constrained output, runtime/token_constraint.h) on the bundled
// stories260K and the test backend: greedy and sampled, the picks equal a reference loop that feeds
// one token at a time and masks the host's logits (on the GPU the device masks and picks:
// Backend::decode_masked, so this compares its picks with the host's), and the reply is JSON that
// validates. And `jitllm -j`: the reply on stdout validates; a keyword constrained output does not
// take is a usage error naming it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "fixtures/engine_factory.h"
#include "fixtures/test_support.h"
#include "runtime/generate.h"
#include "runtime/sampler.h"
#include "runtime/token_constraint.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {
namespace {

using json = nlohmann::json;

std::string bundled_model() { return test::source_dir() + "/models/stories260K.gguf"; }

const char* kSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"enum": ["red", "blue"]}, "maxItems": 3},
    "ok": {"type": "boolean"}}, "required": ["name", "age", "tags"], "additionalProperties": false})";

// The reply against kSchema, checked by hand.
void expect_valid(const std::string& text) {
    const json v = json::parse(text, nullptr, false);
    ASSERT_TRUE(v.is_object()) << text;
    for (const auto& [k, x] : v.items()) {
        if (k == "name") {
            ASSERT_TRUE(x.is_string()) << text;
            EXPECT_LE(x.get<std::string>().size(), 12u * 4) << text;
        } else if (k == "age") {
            EXPECT_TRUE(x.is_number_integer()) << text;
        } else if (k == "tags") {
            ASSERT_TRUE(x.is_array()) << text;
            EXPECT_LE(x.size(), 3u) << text;
            for (const auto& t : x) EXPECT_TRUE(t == "red" || t == "blue") << text;
        } else {
            EXPECT_EQ(k, "ok") << text;
            EXPECT_TRUE(x.is_boolean()) << text;
        }
    }
    EXPECT_TRUE(v.contains("name") && v.contains("age") && v.contains("tags")) << text;
}

// The picks one at a time: logits of the last fed token, masked on the host, sampled by s.
std::vector<int32_t> reference_picks(Engine& e, const std::vector<int32_t>& prompt, const SamplerParams& sp,
                                     const std::shared_ptr<const JsonSchema>& schema,
                                     const std::shared_ptr<const ConstraintVocab>& vocab, int budget) {
    e.backend().set_logits_needed(true);
    e.reset();
    const float* logits = e.feed(prompt);
    std::vector<int32_t> history = prompt, picks;
    JsonConstraint c(schema, vocab);
    Sampler s(sp);
    const int n = e.model().config.n_vocab;
    for (int i = 0; i < budget; ++i) {
        std::vector<float> l(logits, logits + n);
        if (c.mask(l.data(), n, budget - i) == 0) break;
        const int32_t id = s.sample(l.data(), n, history);
        if (e.tokenizer().is_eog(id)) break;
        picks.push_back(id);
        history.push_back(id);
        c.accept(id);
        if (i + 1 == budget) break;
        logits = e.feed({id});
    }
    return picks;
}

TEST(GenerateConstrained, PicksAreTheMaskedHostPicksAndTheReplyValidates) {
    auto e = test::make_engine(bundled_model(), 256);
    const std::vector<int32_t> prompt = e->tokenizer().encode("Once upon a time, a girl", true, false);
    const auto schema = compile_json_schema(json::parse(kSchema), "schema");
    const auto vocab = constraint_vocab(e->tokenizer());
    const SamplerParams params[] = {test::sampler_params(0.0f, 0, 1.0f, 0.0f),
                                    test::sampler_params(0.8f, 40, 0.95f, 0.05f, 11),
                                    test::sampler_params(1.5f, 64, 1.0f, 0.0f, 12)};
    for (const SamplerParams& sp : params) {
        for (int budget : {32, 48, 90}) {
            SCOPED_TRACE(::testing::Message() << "T " << sp.temperature << " budget " << budget);
            const std::vector<int32_t> ref = reference_picks(*e, prompt, sp, schema, vocab, budget);
            e->backend().set_logits_needed(true);
            e->reset();
            const float* logits = e->feed(prompt);
            std::vector<int32_t> history = prompt;
            Sampler s(sp);
            JsonConstraint c(schema, vocab);
            const GenerateResult r = generate(*e, s, logits, history, budget, nullptr, &c);
            EXPECT_EQ(r.ids, ref);
            EXPECT_LE(int(r.ids.size()), budget);
            expect_valid(r.text);
            EXPECT_EQ(e->pos(), int(prompt.size() + r.ids.size()) - (r.stopped_at_eog ? 0 : 1));
            EXPECT_EQ(e->queued(), 0);
        }
    }
}

struct Cli {
    int rc = 0;
    std::string out, err;
};

Cli run_cli(const std::string& args) {
    Cli c;
    c.rc = test::run_command("'" + test::binary_path() + "' -m '" + bundled_model() + "' " + args, &c.out, &c.err);
    return c;
}

TEST(GenerateConstrained, CliJsonSchema) {
    std::string quoted = kSchema;
    for (size_t at = 0; (at = quoted.find('\n', at)) != std::string::npos;) quoted[at] = ' ';
    for (const char* sampling : {"--temp 0", "--temp 0.9 -s 5"}) {
        const Cli c = run_cli(std::string("-p 'Once upon a time' -n 60 ") + sampling + " -j '" + quoted + "'");
        ASSERT_EQ(c.rc, 0) << c.err;
        expect_valid(c.out);
    }
    const Cli bad = run_cli("-n 20 -j '{\"type\": \"string\", \"pattern\": \"a+\"}'");
    EXPECT_EQ(bad.rc, 2) << bad.err;
    EXPECT_NE(bad.err.find("--json-schema.pattern: this keyword is not supported"), std::string::npos) << bad.err;
    const Cli short_budget = run_cli("-n 3 -j '" + quoted + "'");
    EXPECT_EQ(short_budget.rc, 2);
    EXPECT_NE(short_budget.err.find("shortest JSON"), std::string::npos) << short_budget.err;
    const Cli not_json = run_cli("-n 20 -j '{type'");
    EXPECT_EQ(not_json.rc, 2);
    EXPECT_NE(not_json.err.find("not JSON"), std::string::npos) << not_json.err;
}

}  // namespace
}  // namespace jitllm
