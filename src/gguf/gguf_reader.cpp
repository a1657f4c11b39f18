// GGUF reader: mmap or owned bytes, full validation of header, metadata and tensor table at open
// (the typed getters: gguf_getters.cpp; the metadata values: gguf_value.cpp). Does not dequantize (see src/quant/) and does not check that tensors
// fit a model (see src/model/). Format per the GGUF spec (ggml docs/gguf.md), versions 2 and 3.
#include "gguf/gguf_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "core/error.h"
#include "core/utf8.h"

namespace jitllm {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a LE host");

namespace {

constexpr uint64_t kMaxNameBytes = 65535;     // keys and tensor names
constexpr int kMaxArrayDepth = 8;             // nested arrays deeper than this are refused
constexpr uint32_t kMaxDims = 4;              // ggml's GGML_MAX_DIMS
// Scalar and string arrays are kept packed (their bytes, 8 more a string), but a nested array's
// elements take a GgufValue each (~100 bytes), so cap the total to bound memory on a hostile file
// (2^23 elements: under 1 GiB). The largest real vocabularies (262K tokens with scores, types and
// ~500K merges) use about 1.3 million.
constexpr uint64_t kMaxArrayElements = uint64_t(1) << 23;
// Larger alignments only pad files; 1 MiB is far above any writer's choice (ggml uses 32).
constexpr uint64_t kMaxAlignment = uint64_t(1) << 20;
constexpr uint64_t kMinKvBytes = 8 + 4;             // key length + value type
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

bool is_valid_type(uint32_t t) { return t <= uint32_t(GgufValueType::F64); }

// Keys and tensor names: non-empty UTF-8 without control bytes (they appear in messages and are
// compared as text). `what` is "key" or "name"; the cursor's context names the item.
void check_name(const std::string& file, const std::string& context, const char* what,
                const std::string& s) {
    if (s.empty())
        fail("{}: {}: empty {}: expected 1 to {} bytes", file, context, what, kMaxNameBytes);
    size_t bad = utf8_invalid_at(s);
    for (size_t i = 0; i < s.size() && i < bad; ++i)
        if (uint8_t(s[i]) < 0x20 || s[i] == 0x7f) bad = i;
    if (bad != std::string::npos)
        fail("{}: {}: {} '{}' is not printable UTF-8 text: invalid byte 0x{:02x} at offset {}",
             file, context, what, escape_text(s), uint8_t(s[bad]), bad);
}

// Bytes one element of `t` needs at least (strings: the length; arrays: type + count).
uint64_t min_value_bytes(GgufValueType t) {
    if (t == GgufValueType::STRING) return 8;
    if (t == GgufValueType::ARRAY) return 4 + 8;
    return std::max<uint64_t>(1, gguf_scalar_bytes(t));
}

// Shows bytes as they are when printable ASCII, else as \xNN (for the magic in messages).
std::string escape_bytes(const uint8_t* p, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\') s += char(p[i]);
        else s += fmt::format("\\x{:02x}", p[i]);
    }
    return s;
}

// Bounds-checked little-endian reads over [base, base+size). Every read that would pass the end
// throws "<name>: truncated: <context>: <what> ...". The context ("key 'k'", "tensor 't'") is set
// by the caller once per item so that no message text is built on the happy path.
class Cursor {
public:
    Cursor(const uint8_t* base, uint64_t size, const std::string& name)
        : base_(base), size_(size), name_(name) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }
    const std::string& name() const { return name_; }
    const std::string& context() const { return context_; }
    void set_context(std::string c) { context_ = std::move(c); }

    void need(uint64_t n, const char* what) const {
        if (n > remaining())
            fail("{}: truncated: {}: {} needs {} bytes at offset {}, file is {} bytes", name_,
                 context_, what, n, pos_, size_);
    }

    template <typename T>
    T read(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, base_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    // A count of entries each needing at least `min_each` bytes; refused before anything is
    // allocated for it when the rest of the file cannot hold that many.
    void check_count(uint64_t count, uint64_t min_each, std::string_view what) const {
        uint64_t fit = remaining() / min_each;
        if (count > fit)
            fail("{}: truncated or corrupt: {}{}{} is {}, but the {} remaining bytes hold at most {}",
                 name_, context_, context_.empty() ? "" : ": ", what, count, remaining(), fit);
    }

    // n bytes at the cursor (bounds-checked), the cursor past them
    const uint8_t* take(uint64_t n, const char* what) {
        need(n, what);
        const uint8_t* p = base_ + pos_;
        pos_ += n;
        return p;
    }

    std::string read_string(const char* what, uint64_t max_len) { return std::string(read_string_view(what, max_len)); }

    // the string's bytes in the file (valid while the file's bytes are)
    std::string_view read_string_view(const char* what, uint64_t max_len) {
        uint64_t len = read<uint64_t>(what);
        if (len > remaining())
            fail("{}: truncated or corrupt: {}: {} length is {}, but only {} bytes remain", name_,
                 context_, what, len, remaining());
        if (len > max_len)
            fail("{}: {}: {} is too long: expected at most {} bytes, found {}", name_, context_,
                 what, max_len, len);
        std::string_view s(reinterpret_cast<const char*>(base_ + pos_), size_t(len));
        pos_ += len;
        return s;
    }

private:
    const uint8_t* base_;
    uint64_t size_;
    uint64_t pos_ = 0;
    const std::string& name_;
    std::string context_;
};

// Reads metadata values; the cursor's context names the key being read.
class ValueParser {
public:
    explicit ValueParser(Cursor& c) : c_(c) {}

    GgufValue read_value(GgufValueType t, int depth) {
        GgufValue v;
        v.type = t;
        switch (t) {
            case GgufValueType::U8: v.u = c_.read<uint8_t>("value"); break;
            case GgufValueType::I8: v.i = c_.read<int8_t>("value"); break;
            case GgufValueType::U16: v.u = c_.read<uint16_t>("value"); break;
            case GgufValueType::I16: v.i = c_.read<int16_t>("value"); break;
            case GgufValueType::U32: v.u = c_.read<uint32_t>("value"); break;
            case GgufValueType::I32: v.i = c_.read<int32_t>("value"); break;
            case GgufValueType::U64: v.u = c_.read<uint64_t>("value"); break;
            case GgufValueType::I64: v.i = c_.read<int64_t>("value"); break;
            case GgufValueType::F32: v.f = c_.read<float>("value"); break;
            case GgufValueType::F64: v.f = c_.read<double>("value"); break;
            case GgufValueType::BOOL: {
                uint8_t b = c_.read<uint8_t>("value");
                if (b > 1)
                    fail("{}: {}: invalid bool value: expected 0 or 1, found {}", c_.name(),
                         c_.context(), b);
                v.b = b != 0;
                break;
            }
            case GgufValueType::STRING:
                v.str = c_.read_string("string value", std::numeric_limits<uint64_t>::max());
                break;
            case GgufValueType::ARRAY: read_array(v, depth); break;
        }
        return v;
    }

    GgufValueType read_type(const char* role) {
        uint32_t t = c_.read<uint32_t>(role);
        if (!is_valid_type(t))
            fail("{}: {}: invalid {} {}: expected 0..12", c_.name(), c_.context(), role, t);
        return GgufValueType(t);
    }

private:
    void read_array(GgufValue& v, int depth) {
        if (depth >= kMaxArrayDepth)
            fail("{}: {}: arrays nested too deeply: expected at most {} levels", c_.name(),
                 c_.context(), kMaxArrayDepth);
        v.elem_type = read_type("array element type");
        uint64_t n = c_.read<uint64_t>("array length");
        c_.check_count(n, min_value_bytes(v.elem_type),
                       fmt::format("array length ({} elements)", gguf_value_type_name(v.elem_type)));
        total_elements_ += n;
        if (total_elements_ > kMaxArrayElements)
            fail("{}: {}: too many array elements in the metadata: expected at most {} in all, "
                 "found {}",
                 c_.name(), c_.context(), kMaxArrayElements, total_elements_);
        // n is bounded by the bytes left and the element cap above: reserving it exactly avoids
        // the transient doubling of a growing vector on the largest arrays.
        if (v.elem_type == GgufValueType::ARRAY) {
            v.arr.reserve(size_t(n));
            for (uint64_t k = 0; k < n; ++k) v.arr.push_back(read_value(v.elem_type, depth + 1));
        } else if (v.elem_type == GgufValueType::STRING) {
            v.str_end.reserve(size_t(n));
            for (uint64_t k = 0; k < n; ++k)
                v.push_string(c_.read_string_view("string value", std::numeric_limits<uint64_t>::max()));
        } else {  // scalars: the file's bytes as they are (check_count above: they are all there)
            const size_t bytes = size_t(n) * gguf_scalar_bytes(v.elem_type);
            const uint8_t* p = c_.take(bytes, "array elements");
            v.packed.assign(p, p + bytes);
            if (v.elem_type == GgufValueType::BOOL)
                for (uint64_t k = 0; k < n; ++k)
                    if (v.packed[k] > 1)
                        fail("{}: {}: invalid bool value: expected 0 or 1, found {} (array element {})", c_.name(),
                             c_.context(), v.packed[k], k);
        }
    }

    Cursor& c_;
    uint64_t total_elements_ = 0;
};

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

// --- open / from_bytes ---

std::unique_ptr<GgufReader> GgufReader::open(const std::string& path) {
    std::unique_ptr<GgufReader> r(new GgufReader());
    r->path_ = path;
    if (const auto [data, size] = embedded_gguf(path); data) {  // read in place, as from_bytes
        r->base_ = data;
        r->size_ = size;
        r->parse();
        return r;
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        fail("{}: cannot open: {}", path, std::strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        fail("{}: cannot open: expected a GGUF file, found a directory", path);
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail("{}: cannot open: expected a regular GGUF file, found a special file", path);
    }
    if (st.st_size == 0) {
        ::close(fd);
        fail("{}: not a GGUF file: the file is empty (0 bytes)", path);
    }
    r->size_ = uint64_t(st.st_size);
    void* m = ::mmap(nullptr, size_t(r->size_), PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    if (m == MAP_FAILED) {
        ::close(fd);
        fail("{}: cannot map: {}", path, std::strerror(e));
    }
    r->fd_ = fd;  // kept for copy_out's reads
    r->map_ = m;
    r->base_ = static_cast<const uint8_t*>(m);
    r->parse();  // on throw, the unique_ptr unmaps
    return r;
}

std::unique_ptr<GgufReader> GgufReader::from_bytes(std::vector<uint8_t> bytes, std::string name) {
    std::unique_ptr<GgufReader> r(new GgufReader());
    r->path_ = std::move(name);
    r->owned_ = std::move(bytes);
    r->base_ = r->owned_.data();
    r->size_ = r->owned_.size();
    r->parse();
    return r;
}

GgufReader::~GgufReader() {
    if (map_) ::munmap(map_, size_t(size_));
    if (fd_ >= 0) ::close(fd_);
}

void GgufReader::copy_out(const uint8_t* p, size_t n, uint8_t* dst) const {
    JITLLM_CHECK(holds(p, n), "copy_out of {} bytes outside {}", n, path_);
    if (fd_ < 0) {
        std::memcpy(dst, p, n);
        return;
    }
    uint64_t off = uint64_t(p - base_);
    while (n > 0) {
        const ssize_t got = ::pread(fd_, dst, n, off_t(off));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            fail("{}: cannot read {} bytes at offset {}: {}", path_, n, off, got < 0 ? std::strerror(errno) : "the file is shorter than when it was opened");
        dst += got;
        off += uint64_t(got);
        n -= size_t(got);
    }
}

// --- parsing and validation ---

void GgufReader::parse() {
    const std::string& name = path_;
    if (size_ < 4)
        fail("{}: not a GGUF file: expected magic \"GGUF\", found a {}-byte file", name, size_);
    if (std::memcmp(base_, "GGUF", 4) != 0)
        fail("{}: not a GGUF file: expected magic \"GGUF\", found \"{}\"", name,
             escape_bytes(base_, 4));
    Cursor c(base_, size_, name);
    c.set_context("header");
    c.read<uint32_t>("magic");
    version_ = c.read<uint32_t>("version");
    if (version_ == 1)
        fail("{}: GGUF version 1 is not supported: expected version 2 or 3, found 1; hint: "
             "re-convert the file with a current converter",
             name);
    if (version_ != 2 && version_ != 3) {
        uint32_t swapped = __builtin_bswap32(version_);
        fail("{}: unsupported GGUF version: expected version 2 or 3, found {}{}", name, version_,
             swapped >= 1 && swapped <= 3
                 ? "; hint: this looks like a big-endian GGUF, which is not supported"
                 : "");
    }
    // Version 2 has the same layout as version 3 (v3 only added big-endian files).
    uint64_t n_tensors = c.read<uint64_t>("tensor_count");
    uint64_t n_kv = c.read<uint64_t>("kv_count");
    c.set_context("");
    c.check_count(n_kv, kMinKvBytes, "kv_count");
    // Each tensor info needs bytes after the KVs too; a first, loose bound before the KVs.
    c.check_count(n_tensors, kMinTensorInfoBytes, "tensor_count");

    // Metadata.
    ValueParser vp(c);
    kvs_.reserve(size_t(std::min<uint64_t>(n_kv, 1024)));
    std::unordered_set<std::string> keys;
    for (uint64_t k = 0; k < n_kv; ++k) {
        c.set_context(fmt::format("KV #{}", k));
        std::string key = c.read_string("key", kMaxNameBytes);
        check_name(name, c.context(), "key", key);
        if (!keys.insert(key).second)
            fail("{}: duplicate key '{}': expected each key once, found it again at KV #{}", name,
                 key, k);
        c.set_context(fmt::format("key '{}'", key));
        GgufValueType t = vp.read_type("value type");
        GgufValue v = vp.read_value(t, 0);
        kvs_.push_back(GgufKv{std::move(key), std::move(v)});
    }

    if (const GgufKv* a = find_kv("general.alignment")) {
        if (a->value.type != GgufValueType::U32)
            fail("{}: key 'general.alignment': expected u32, found {}", name,
                 gguf_value_type_name(a->value.type));
        if (a->value.u == 0 || (a->value.u & (a->value.u - 1)) != 0)
            fail("{}: key 'general.alignment': expected a nonzero power of two, found {}", name,
                 a->value.u);
        if (a->value.u > kMaxAlignment)
            fail("{}: key 'general.alignment': expected at most {}, found {}", name, kMaxAlignment,
                 a->value.u);
        alignment_ = a->value.u;
    }

    // Tensor infos.
    c.set_context("");
    c.check_count(n_tensors, kMinTensorInfoBytes, "tensor_count");
    tensors_.reserve(size_t(std::min<uint64_t>(n_tensors, 1024)));
    std::unordered_set<std::string> names;
    for (uint64_t k = 0; k < n_tensors; ++k) {
        GgufTensorInfo ti;
        c.set_context(fmt::format("tensor #{}", k));
        ti.name = c.read_string("name", kMaxNameBytes);
        check_name(name, c.context(), "name", ti.name);
        std::string subj = fmt::format("tensor '{}'", ti.name);
        c.set_context(subj);
        if (!names.insert(ti.name).second)
            fail("{}: duplicate {}: expected each tensor name once, found it again at tensor #{}",
                 name, subj, k);
        uint32_t n_dims = c.read<uint32_t>("n_dims");
        if (n_dims < 1 || n_dims > kMaxDims)
            fail("{}: {}: invalid n_dims: expected 1..{}, found {}", name, subj, kMaxDims, n_dims);
        uint64_t n_el = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            uint64_t dim = c.read<uint64_t>("dims");
            if (dim == 0)
                fail("{}: {}: invalid dims[{}]: expected at least 1, found 0", name, subj, d);
            if (__builtin_mul_overflow(n_el, dim, &n_el))
                fail("{}: {}: element count overflows 64 bits (dims[{}] = {})", name, subj, d,
                     dim);
            ti.dims.push_back(dim);
        }
        uint32_t type_id = c.read<uint32_t>("type");
        std::optional<TypeTraits> tt = type_traits_find(type_id);
        if (!tt) fail("{}: {}: unknown ggml type id {}", name, subj, type_id);
        ti.type = tt->type;
        ti.offset = c.read<uint64_t>("offset");
        if (ti.dims[0] % tt->block_size != 0)
            fail("{}: {}: dims[0] = {} is not a multiple of the {} block size: expected a "
                 "multiple of {}",
                 name, subj, ti.dims[0], tt->name, tt->block_size);
        uint64_t bytes = 0;
        if (__builtin_mul_overflow(ti.dims[0] / tt->block_size, uint64_t(tt->type_size), &bytes) ||
            __builtin_mul_overflow(bytes, n_el / ti.dims[0], &bytes))
            fail("{}: {}: byte size overflows 64 bits", name, subj);
        ti.n_elements = n_el;
        ti.n_bytes = bytes;
        tensors_.push_back(std::move(ti));
    }

    data_offset_ = align_up(c.pos(), alignment_);

    // Data ranges: aligned, inside the file, disjoint.
    for (GgufTensorInfo& ti : tensors_) {
        if (ti.offset % alignment_ != 0)
            fail("{}: tensor '{}': offset {} is misaligned: expected a multiple of {}", name,
                 ti.name, ti.offset, alignment_);
        uint64_t begin = 0, end = 0;
        if (__builtin_add_overflow(data_offset_, ti.offset, &begin) ||
            __builtin_add_overflow(begin, ti.n_bytes, &end) || end > size_) {
            if (begin < data_offset_ || end < begin)  // overflowed: print the overflow-free part
                fail("{}: truncated: tensor '{}' needs {} bytes at data offset {}, file is {} "
                     "bytes",
                     name, ti.name, ti.n_bytes, ti.offset, size_);
            fail("{}: truncated: tensor '{}' needs bytes [{}, {}), file is {} bytes", name,
                 ti.name, begin, end, size_);
        }
        ti.data = base_ + begin;
    }
    std::vector<const GgufTensorInfo*> by_offset;
    by_offset.reserve(tensors_.size());
    for (const GgufTensorInfo& ti : tensors_) by_offset.push_back(&ti);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < by_offset.size(); ++k) {
        const GgufTensorInfo* a = by_offset[k - 1];
        const GgufTensorInfo* b = by_offset[k];
        if (a->offset + a->n_bytes > b->offset)
            fail("{}: tensors '{}' and '{}' overlap: '{}' has data bytes [{}, {}), '{}' starts at "
                 "{}",
                 name, a->name, b->name, a->name, a->offset, a->offset + a->n_bytes, b->name,
                 b->offset);
    }
}

}  // namespace jitllm
