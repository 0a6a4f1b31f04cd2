#include "kv/prefix_store.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "base/log.h"

namespace strata::kv {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'K', 'V', 'P', 'G', '\0'};
constexpr uint32_t kVersion = 1;
constexpr const char* kSuffix = ".kvpage";

class Writer {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<unsigned char>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<unsigned char>(v >> (8 * i)));
  }
  void key(const PageKey& k) { bytes(k.bytes.data(), k.bytes.size()); }
  std::vector<unsigned char>& out() { return out_; }

 private:
  std::vector<unsigned char> out_;
};

// Reads fields from a file's bytes; any read past the end fails the whole parse (torn file).
class Reader {
 public:
  explicit Reader(std::span<const unsigned char> in) : in_(in) {}
  bool bytes(void* p, size_t n) {
    if (n > in_.size() - at_) return false;
    std::memcpy(p, in_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool u32(uint32_t& v) {
    unsigned char b[4];
    if (!bytes(b, 4)) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{b[i]} << (8 * i);
    return true;
  }
  bool u64(uint64_t& v) {
    unsigned char b[8];
    if (!bytes(b, 8)) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{b[i]} << (8 * i);
    return true;
  }
  bool key(PageKey& k) { return bytes(k.bytes.data(), k.bytes.size()); }
  size_t at() const { return at_; }
  size_t left() const { return in_.size() - at_; }

 private:
  std::span<const unsigned char> in_;
  size_t at_ = 0;
};

Error broken(const std::string& why) { return make_error(ErrorCode::kInvalidFile, why); }

// Marks a file of another model or configuration: skipped without a warning of its own.
Error foreign() {
  return make_error(ErrorCode::kUnsupported, "another model's or configuration's page");
}

}  // namespace

Result<std::unique_ptr<PrefixStore>> PrefixStore::open(const std::string& dir, const PageKey& root,
                                                       const KvShape& shape) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "cannot use '" + dir + "' as the KV cache folder (--kv-cache-dir): " +
                          (ec ? ec.message() : std::string("not a folder")));
  }
  return std::unique_ptr<PrefixStore>(new PrefixStore(dir, root, shape));
}

std::string PrefixStore::path(const PageKey& key) const {
  return (fs::path(dir_) / (key.hex() + kSuffix)).string();
}

Status PrefixStore::save(const PrefixEntry& entry, KvPrecision precision,
                         std::span<const unsigned char> data,
                         std::span<const uint16_t> summary) const {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.u32(kVersion);
  w.key(root_);
  w.key(entry.key);
  w.key(entry.parent);
  w.u32(static_cast<uint32_t>(precision));
  for (size_t v : {shape_.page_size, shape_.n_layers, shape_.n_kv_heads, shape_.head_dim}) {
    w.u32(static_cast<uint32_t>(v));
  }
  for (int32_t t : entry.tokens) w.u32(static_cast<uint32_t>(t));
  w.u64(data.size());
  w.bytes(data.data(), data.size());
  w.u64(summary.size());
  for (uint16_t s : summary) w.bytes(&s, 2);  // little-endian hosts only write these files
  Sha256 h;
  h.update(w.out().data(), w.out().size());
  const std::array<uint8_t, 32> digest = h.finish();
  w.bytes(digest.data(), digest.size());
  // Written aside and renamed: a reader never sees half a file of this name.
  const std::string final_path = path(entry.key);
  const std::string temp = final_path + ".tmp";
  {
    std::ofstream f(temp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(w.out().data()),
            static_cast<std::streamsize>(w.out().size()));
    if (!f) return broken(temp + ": cannot write the KV page (disk full?)");
  }
  std::error_code ec;
  fs::rename(temp, final_path, ec);
  if (ec) return broken(final_path + ": cannot rename the written KV page: " + ec.message());
  return ok_status();
}

void PrefixStore::remove(const PageKey& key) const {
  std::error_code ec;
  fs::remove(path(key), ec);
}

Result<SavedPage> parse_saved_page(std::span<const uint8_t> in, const PageKey& root_expected,
                                   const KvShape& shape) {
  if (in.size() < 32) return broken("truncated");
  Reader r(in.first(in.size() - 32));
  char magic[8];
  uint32_t version = 0;
  PageKey root;
  if (!r.bytes(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) {
    return broken("not a strata KV page");
  }
  if (!r.u32(version) || version != kVersion) {
    return broken("written by another version of strata (format " + std::to_string(version) +
                  ", this one reads " + std::to_string(kVersion) + ")");
  }
  SavedPage page;
  uint32_t precision = 0, dims[4] = {};
  if (!r.key(root) || !r.key(page.entry.key) || !r.key(page.entry.parent) || !r.u32(precision) ||
      !r.u32(dims[0]) || !r.u32(dims[1]) || !r.u32(dims[2]) || !r.u32(dims[3])) {
    return broken("truncated");
  }
  // The checksum before anything is believed: a torn tail fails here, not as a foreign page.
  Sha256 h;
  h.update(in.data(), in.size() - 32);
  if (std::memcmp(h.finish().data(), in.data() + in.size() - 32, 32) != 0) {
    return broken("checksum mismatch (torn or corrupt)");
  }
  if (root != root_expected || dims[0] != shape.page_size || dims[1] != shape.n_layers ||
      dims[2] != shape.n_kv_heads || dims[3] != shape.head_dim) {
    return foreign();
  }
  if (precision > static_cast<uint32_t>(KvPrecision::kR8)) return broken("bad precision");
  page.precision = static_cast<KvPrecision>(precision);
  page.entry.tokens.resize(shape.page_size);
  for (int32_t& t : page.entry.tokens) {
    uint32_t u = 0;
    if (!r.u32(u)) return broken("truncated");
    t = static_cast<int32_t>(u);
  }
  uint64_t n = 0;
  // A page whose window part was released before it was saved has its global part only.
  if (!r.u64(n) ||
      (n != page_bytes(shape, page.precision) && n != global_part_bytes(shape, page.precision)) ||
      n > r.left()) {
    return broken("page data of the wrong size");
  }
  page.data.resize(n);
  r.bytes(page.data.data(), n);
  if (!r.u64(n) || n > r.left() / 2) return broken("truncated");
  page.summary.resize(n);
  r.bytes(page.summary.data(), n * 2);
  if (r.left() != 0) return broken("trailing bytes");
  if (chain_key(page.entry.parent, page.entry.tokens) != page.entry.key) {
    return broken("its key does not match its tokens");
  }
  return page;
}

Result<SavedPage> PrefixStore::read(const std::string& file) const {
  std::ifstream f(file, std::ios::binary);
  if (!f) return broken(file + ": cannot be opened");
  const std::vector<unsigned char> in((std::istreambuf_iterator<char>(f)), {});
  Result<SavedPage> page = parse_saved_page(in, root_, shape_);
  if (page.ok()) return page;
  return make_error(page.error().code, file + ": " + page.error().message);
}

PrefixStore::LoadCounts PrefixStore::load(const std::function<bool(SavedPage&&)>& use) const {
  LoadCounts counts;
  std::vector<std::pair<fs::file_time_type, std::string>> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != kSuffix) continue;
    files.emplace_back(e.last_write_time(ec), e.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const auto& [time, file] : files) {
    Result<SavedPage> page = read(file);
    if (page.ok()) {
      ++(use(std::move(*page)) ? counts.loaded : counts.foreign);
    } else if (page.error().code == ErrorCode::kUnsupported) {
      ++counts.foreign;
    } else {
      log_warn("skipping a saved KV page: " + page.error().message);
      ++counts.broken;
    }
  }
  if (counts.foreign > 0) {
    log_warn(std::to_string(counts.foreign) + " saved KV page(s) in " + dir_ +
             " are of another model or KV configuration; ignored (they stay on disk)");
  }
  return counts;
}

}  // namespace strata::kv
