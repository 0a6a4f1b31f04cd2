// Prefix-cache pages on disk (--kv-cache-dir), so that a restarted server starts warm.
//
// One file per indexed page, named by its key (kv/page_key.h), written when the page's last
// holder lets it go (its contents are final then) and removed when the pool hands the page out
// for other contents: the folder mirrors the in-memory prefix cache and never outgrows the pool.
//
// File layout, little-endian:
//   "STRKVPG\0"  u32 version
//   root[16]                      what the values depend on (model, KV numerics): Engine::create
//   key[16] parent[16]            the page's chain key and its parent's (kv/page_key.h)
//   u32 precision u32 page_size u32 n_layers u32 n_kv_heads u32 head_dim
//   i32 tokens[page_size]
//   u64 data_bytes   data         the page in its precision: its global part, then its window
//                                 part unless that was released (kv/kv_page.h)
//   u64 summary_u16s summary      its key summaries (kv/key_summary.h), or none
//   sha256[32]                    of everything before it
// A file is used only when every field agrees with this engine and the key is the chain key of
// its parent and tokens; anything else is skipped with a warning (another model's or
// configuration's pages quietly, since a shared folder may hold them), never loaded wrong.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "kv/kv_page.h"
#include "kv/prefix_index.h"

namespace strata::kv {

struct SavedPage {
  PrefixEntry entry;
  KvPrecision precision = KvPrecision::kF16;
  std::vector<unsigned char> data;
  std::vector<uint16_t> summary;  // empty when saved without summaries
};

// One page file's bytes as a page of `shape` whose values `root` describes: kInvalidFile (why)
// for torn, corrupt or other-version bytes, kUnsupported for another root or shape.
Result<SavedPage> parse_saved_page(std::span<const uint8_t> bytes, const PageKey& root,
                                   const KvShape& shape);

class PrefixStore {
 public:
  // The folder (created if missing) for pages whose values `root` describes.
  static Result<std::unique_ptr<PrefixStore>> open(const std::string& dir, const PageKey& root,
                                                   const KvShape& shape);

  const std::string& dir() const { return dir_; }
  Status save(const PrefixEntry& entry, KvPrecision precision, std::span<const unsigned char> data,
              std::span<const uint16_t> summary) const;
  void remove(const PageKey& key) const;
  struct LoadCounts {
    size_t loaded = 0;
    size_t foreign = 0;  // another model's or configuration's (another root or shape)
    size_t broken = 0;   // torn, corrupt or of another version
  };
  // Reads every page file, oldest first, handing each valid one of this root to `use` (which
  // returns false for a page it cannot place: counted as foreign); warns once for each broken
  // file and once in all for foreign ones.
  LoadCounts load(const std::function<bool(SavedPage&&)>& use) const;

 private:
  PrefixStore(std::string dir, const PageKey& root, const KvShape& shape)
      : dir_(std::move(dir)), root_(root), shape_(shape) {}
  std::string path(const PageKey& key) const;
  Result<SavedPage> read(const std::string& path) const;

  std::string dir_;
  PageKey root_;
  KvShape shape_;
};

}  // namespace strata::kv
