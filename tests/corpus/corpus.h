// Malformed-file corpus (issue 8): small valid Llama models built with GgufWriter (SentencePiece
// and byte-level BPE vocabularies), the bundled stories260K, and hundreds of corrupted variants
// of them, each with the substring its error message must contain. Used by corpus_test (every
// file through the jitllm binary) and make_corpus (files on disk, fuzz seeds). Files are built on
// demand: the whole corpus never sits in memory at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace jitllm::corpus {

using Bytes = std::vector<uint8_t>;

struct Case {
    std::string name;    // unique and file-name safe: "<fixture>.<what>"
    std::string expect;  // substring of the one error message; empty: the file must load and run
    std::function<Bytes()> bytes;
};

// 2 layers, dim 64 (4 heads, 2 KV heads), FFN 64, context 64; 48-token SentencePiece vocab;
// token_embd f16, attention and output q8_0, FFN q4_0, norms f32 (about 50 KB).
Bytes tiny_llama_spm();
// The same model with a 34-token byte-level BPE ("gpt2", pre "gpt-2") vocab and 6 merges.
Bytes tiny_llama_bpe();
// 1 layer, dim 8, 8-token vocab: a valid model of about 3 KB (fuzz seeds).
Bytes micro_llama_spm();
Bytes micro_llama_bpe();
// Metadata of every value type, nested arrays, three small tensors; no model (fuzz seed).
Bytes micro_gguf_all_types();

// Every case. Variants of stories260K only when `stories` holds that file's bytes.
std::vector<Case> all_cases(std::shared_ptr<const Bytes> stories);

}  // namespace jitllm::corpus
