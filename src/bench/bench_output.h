// `jitllm bench` output formats: md (llama-bench's table plus our GB/s and % copy bw columns),
// csv, json, jsonl and sql with llama-bench's field names and order, ours appended. The field
// list is declared once (bench_fields). Printers stream: begin(), one row() per result, end().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/bench_result.h"

namespace jitllm {

enum class BenchFormat { Md, Csv, Json, Jsonl, Sql };
// "md" | "csv" | "json" | "jsonl" | "sql"; throws a usage Error naming `flag` otherwise.
BenchFormat bench_format_from_name(const std::string& name, const std::string& flag);

enum class FieldType { Text, Int, Real, Bool };  // SQL: TEXT, INTEGER, REAL, INTEGER

struct FieldValue {
    const char* name;
    FieldType type;
    std::string text;  // Text
    int64_t i = 0;     // Int
    double r = 0;      // Real
    bool b = false;    // Bool
};

// Every csv/json/sql field of a result, in output order: llama-bench's core fields, then ours.
// The names alone: bench_fields(BenchResult{}).
std::vector<FieldValue> bench_fields(const BenchResult& r);

struct PrintOptions {
    bool gpu = false;                // md: an `ngl` column instead of `threads`, and the power columns
    std::string sql_table = "test";  // sql: table name (llama-bench's default)
};

class BenchPrinter {
public:
    virtual ~BenchPrinter() = default;
    virtual std::string begin() = 0;
    virtual std::string row(const BenchResult& r) = 0;
    virtual std::string end() = 0;
    static std::unique_ptr<BenchPrinter> make(BenchFormat f, const PrintOptions& opt);
};

// The whole output for a finished result set (begin + rows + end).
std::string bench_format(const std::vector<BenchResult>& results, BenchFormat f,
                         const PrintOptions& opt);

}  // namespace jitllm
