// `jitllm bench` output formats (see bench_output.h). Conventions follow llama-bench's README:
// csv quotes every value, json/jsonl add samples_ns/samples_ts arrays, booleans are true/false in
// json and 0/1 in csv/sql, sql is CREATE TABLE IF NOT EXISTS + one INSERT per result.
#include "bench/bench_output.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace jitllm {

BenchFormat bench_format_from_name(const std::string& name, const std::string& flag) {
    if (name == "md") return BenchFormat::Md;
    if (name == "csv") return BenchFormat::Csv;
    if (name == "json") return BenchFormat::Json;
    if (name == "jsonl") return BenchFormat::Jsonl;
    if (name == "sql") return BenchFormat::Sql;
    fail_usage("{}: unknown output format: expected md, csv, json, jsonl or sql, found '{}'", flag, name);
}

namespace {

FieldValue text(const char* n, std::string v) { return {n, FieldType::Text, std::move(v)}; }
FieldValue integer(const char* n, int64_t v) {
    FieldValue f{n, FieldType::Int, {}};
    f.i = v;
    return f;
}
FieldValue real(const char* n, double v) {
    FieldValue f{n, FieldType::Real, {}};
    f.r = v;
    return f;
}
FieldValue boolean(const char* n, bool v) {
    FieldValue f{n, FieldType::Bool, {}};
    f.b = v;
    return f;
}

}  // namespace

std::vector<FieldValue> bench_fields(const BenchResult& r) {
    return {
        // llama-bench's core fields (2025 schema), same names, units and order
        text("build_commit", r.build_commit),
        integer("build_number", r.build_number),
        text("cpu_info", r.cpu_info),
        text("gpu_info", r.gpu_info),
        text("backends", r.backends),
        text("model_filename", r.model_filename),
        text("model_type", r.model_type),
        integer("model_size", int64_t(r.model_size)),
        integer("model_n_params", int64_t(r.model_n_params)),
        integer("n_batch", r.n_batch),
        integer("n_ubatch", r.n_ubatch),
        integer("n_threads", r.n_threads),
        text("cpu_mask", r.cpu_mask),
        boolean("cpu_strict", r.cpu_strict),
        integer("poll", r.poll),
        text("type_k", r.type_k),
        text("type_v", r.type_v),
        integer("n_gpu_layers", r.n_gpu_layers),
        text("split_mode", r.split_mode),
        integer("main_gpu", r.main_gpu),
        boolean("no_kv_offload", r.no_kv_offload),
        boolean("flash_attn", r.flash_attn),
        text("tensor_split", r.tensor_split),
        boolean("use_mmap", r.use_mmap),
        boolean("embeddings", r.embeddings),
        integer("n_prompt", r.n_prompt),
        integer("n_gen", r.n_gen),
        integer("n_depth", r.n_depth),
        text("test_time", r.test_time),
        integer("avg_ns", int64_t(r.avg_ns())),
        integer("stddev_ns", int64_t(r.stddev_ns())),
        real("avg_ts", r.avg_ts()),
        real("stddev_ts", r.stddev_ts()),
        // ours
        integer("bytes_per_token", int64_t(r.bytes_per_token)),
        real("bw_gb_s", r.bw_gb_s()),
        real("copy_bw_gb_s", r.copy_bw_gb_s),
        real("pct_copy_bw", r.pct_copy_bw()),
        real("jit_compile_ms", r.jit_compile_ms),
        text("kernel_cache", r.kernel_cache),
        text("gpu_arch", r.gpu_arch),
        text("power_source", r.power_source),
        real("power_w", r.power_w),
        real("energy_j_per_token", r.energy_j_per_token),
        real("power_capped_pct", r.power_capped_pct),
    };
}

namespace {

// csv and sql numbers: integers exactly, reals with 6 decimals (as C's "%f").
std::string plain_value(const FieldValue& f) {
    switch (f.type) {
        case FieldType::Text: return f.text;
        case FieldType::Int: return fmt::format("{}", f.i);
        case FieldType::Real: return fmt::format("{:.6f}", f.r);
        case FieldType::Bool: return f.b ? "1" : "0";
    }
    return {};
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
        s.replace(p, from.size(), to);
    return s;
}

// --- md ---

struct MdColumn {
    const char* header;
    int width;  // > 0 right-aligned, < 0 left-aligned
};

std::string md_line(const std::vector<MdColumn>& cols, const std::vector<std::string>& cells) {
    std::string s = "|";
    for (size_t i = 0; i < cols.size(); ++i) {
        const int w = std::abs(cols[i].width);
        s += cols[i].width < 0 ? fmt::format(" {:<{}} |", cells[i], w)
                               : fmt::format(" {:>{}} |", cells[i], w);
    }
    return s + "\n";
}

class MdPrinter : public BenchPrinter {
public:
    explicit MdPrinter(const PrintOptions& o) {
        cols_ = {{"model", -30},   {"size", 10},
                 {"params", 10},   {"backend", -8},
                 {o.gpu ? "ngl" : "threads", 7},
                 {"test", 16},     {"t/s", 20},
                 {"GB/s", 9},      {"% copy bw", 9}};
        if (o.gpu) {  // the board's power (NVML): mean watts, and the share of time at the power cap
            cols_.push_back({"W", 5});
            cols_.push_back({"% capped", 8});
        }
    }
    std::string begin() override {
        std::vector<std::string> head, rule;
        for (const auto& c : cols_) {
            head.push_back(c.header);
            const int w = std::abs(c.width);
            rule.push_back(c.width < 0 ? ":" + std::string(size_t(w - 1), '-')
                                       : std::string(size_t(w - 1), '-') + ":");
        }
        return md_line(cols_, head) + md_line(cols_, rule);
    }
    std::string row(const BenchResult& r) override {
        if (build_.empty()) build_ = fmt::format("build: {} ({})\n", r.build_commit, r.build_number);
        if (r.copy_bw_gb_s > 0) {
            std::string who = r.backends;
            if (!r.gpu_info.empty()) who += ", " + r.gpu_info;
            if (r.n_gpu_layers == 0) who += fmt::format(", {} thread{}", r.n_threads, r.n_threads == 1 ? "" : "s");
            const std::string line = fmt::format("copy bandwidth: {:.2f} GB/s ({})\n", r.copy_bw_gb_s, who);
            if (copy_lines_.find(line) == std::string::npos) copy_lines_ += line;
        }
        constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
        const std::string size = double(r.model_size) < kGiB
                                     ? fmt::format("{:.2f} MiB", double(r.model_size) / (1024.0 * 1024.0))
                                     : fmt::format("{:.2f} GiB", double(r.model_size) / kGiB);
        const std::string params = r.model_n_params < 1000000000ull
                                       ? fmt::format("{:.2f} M", double(r.model_n_params) / 1e6)
                                       : fmt::format("{:.2f} B", double(r.model_n_params) / 1e9);
        const bool bw = r.bytes_per_token > 0;
        const bool pct = bw && r.copy_bw_gb_s > 0;
        std::vector<std::string> cells = {r.model_type, size, params, r.backends,
                                          fmt::format("{}", r.n_gpu_layers > 0 ? r.n_gpu_layers : r.n_threads),
                                          r.test().name(),
                                          fmt::format("{:.2f} ± {:.2f}", r.avg_ts(), r.stddev_ts()),
                                          bw ? fmt::format("{:.2f}", r.bw_gb_s()) : "-",
                                          pct ? fmt::format("{:.1f}", r.pct_copy_bw()) : "-"};
        if (cols_.size() > cells.size()) {
            const bool pw = !r.power_source.empty();
            cells.push_back(pw ? fmt::format("{:.0f}", r.power_w) : "-");
            cells.push_back(pw ? fmt::format("{:.1f}", r.power_capped_pct) : "-");
        }
        return md_line(cols_, cells);
    }
    std::string end() override {
        if (build_.empty()) return {};
        return "\n" + build_ + copy_lines_;
    }

private:
    std::vector<MdColumn> cols_;
    std::string build_, copy_lines_;
};

// --- csv ---

class CsvPrinter : public BenchPrinter {
public:
    std::string begin() override {
        std::string s;
        for (const auto& f : bench_fields(BenchResult{})) s += (s.empty() ? "" : ",") + std::string(f.name);
        return s + "\n";
    }
    std::string row(const BenchResult& r) override {
        std::string s;
        for (const auto& f : bench_fields(r)) {
            if (!s.empty()) s += ",";
            s += "\"" + replace_all(plain_value(f), "\"", "\"\"") + "\"";
        }
        return s + "\n";
    }
    std::string end() override { return {}; }
};

// --- json / jsonl ---

nlohmann::ordered_json to_json(const BenchResult& r) {
    nlohmann::ordered_json j;
    for (const auto& f : bench_fields(r)) {
        switch (f.type) {
            case FieldType::Text: j[f.name] = f.text; break;
            case FieldType::Int: j[f.name] = f.i; break;
            case FieldType::Real: j[f.name] = f.r; break;
            case FieldType::Bool: j[f.name] = f.b; break;
        }
    }
    j["samples_ns"] = r.samples_ns;
    j["samples_ts"] = r.samples_ts();
    return j;
}

class JsonPrinter : public BenchPrinter {
public:
    std::string begin() override { return "["; }
    std::string row(const BenchResult& r) override {
        // the object indented one level inside the array
        const std::string obj = replace_all(to_json(r).dump(2), "\n", "\n  ");
        std::string s = first_ ? "\n  " : ",\n  ";
        first_ = false;
        return s + obj;
    }
    std::string end() override { return first_ ? "]\n" : "\n]\n"; }

private:
    bool first_ = true;
};

class JsonlPrinter : public BenchPrinter {
public:
    std::string begin() override { return {}; }
    std::string row(const BenchResult& r) override { return to_json(r).dump() + "\n"; }
    std::string end() override { return {}; }
};

// --- sql ---

class SqlPrinter : public BenchPrinter {
public:
    explicit SqlPrinter(std::string table) : table_(std::move(table)) {}
    std::string begin() override {
        std::string s = fmt::format("CREATE TABLE IF NOT EXISTS {} (\n", table_);
        const auto fields = bench_fields(BenchResult{});
        for (size_t i = 0; i < fields.size(); ++i) {
            const FieldType t = fields[i].type;
            s += fmt::format("  {} {}{}\n", fields[i].name,
                             t == FieldType::Text ? "TEXT" : t == FieldType::Real ? "REAL" : "INTEGER",
                             i + 1 < fields.size() ? "," : "");
        }
        return s + ");\n";
    }
    std::string row(const BenchResult& r) override {
        std::string names, values;
        for (const auto& f : bench_fields(r)) {
            if (!names.empty()) {
                names += ", ";
                values += ", ";
            }
            names += f.name;
            values += f.type == FieldType::Text ? "'" + replace_all(f.text, "'", "''") + "'"
                                                : plain_value(f);
        }
        return fmt::format("INSERT INTO {} ({}) VALUES ({});\n", table_, names, values);
    }
    std::string end() override { return {}; }

private:
    std::string table_;
};

}  // namespace

std::unique_ptr<BenchPrinter> BenchPrinter::make(BenchFormat f, const PrintOptions& opt) {
    switch (f) {
        case BenchFormat::Md: return std::make_unique<MdPrinter>(opt);
        case BenchFormat::Csv: return std::make_unique<CsvPrinter>();
        case BenchFormat::Json: return std::make_unique<JsonPrinter>();
        case BenchFormat::Jsonl: return std::make_unique<JsonlPrinter>();
        case BenchFormat::Sql: return std::make_unique<SqlPrinter>(opt.sql_table);
    }
    JITLLM_CHECK(false, "unknown BenchFormat {}", int(f));
    return nullptr;
}

std::string bench_format(const std::vector<BenchResult>& results, BenchFormat f,
                         const PrintOptions& opt) {
    auto p = BenchPrinter::make(f, opt);
    std::string s = p->begin();
    for (const auto& r : results) s += p->row(r);
    return s + p->end();
}

}  // namespace jitllm
