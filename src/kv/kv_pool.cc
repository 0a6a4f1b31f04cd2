#include "kv/kv_pool.h"

#include <cassert>
#include <string>

namespace strata::kv {

KvPool::KvPool(const KvShape& shape, size_t n_pages, KvPrecision precision)
    : shape_(shape),
      precision_(precision),
      page_bytes_(shape.page_elements() * precision_bytes(precision)),
      arena_(page_bytes_ * n_pages),
      pages_(n_pages) {
  free_list_.reserve(n_pages);
  for (size_t i = n_pages; i-- > 0;) free_list_.push_back(static_cast<PageId>(i));
  for (KvPage& p : pages_) p.precision = precision;
}

Result<PageId> KvPool::allocate() {
  if (free_list_.empty()) {
    return make_error(ErrorCode::kOutOfRange,
                      "KV cache is full (" + std::to_string(n_pages()) + " pages of " +
                          std::to_string(shape_.page_size) +
                          " tokens); raise the context size or run fewer sequences at once");
  }
  PageId id = free_list_.back();
  free_list_.pop_back();
  KvPage& p = pages_[id];
  p.ref_count = 1;
  p.n_filled = 0;
  p.precision = precision_;
  return id;
}

void KvPool::retain(PageId id) {
  assert(pages_[id].ref_count > 0);
  ++pages_[id].ref_count;
}

void KvPool::release(PageId id) {
  KvPage& p = pages_[id];
  assert(p.ref_count > 0);
  if (--p.ref_count == 0) free_list_.push_back(id);
}

KvHeadView KvPool::head(PageId id, size_t layer, size_t kv_head) {
  const size_t elem = precision_bytes(pages_[id].precision);
  unsigned char* base = arena_.data() + static_cast<size_t>(id) * page_bytes_ +
                        layer * shape_.layer_elements() * elem;
  const size_t block = shape_.head_block_elements() * elem;
  return KvHeadView{base + kv_head * block, base + (shape_.n_kv_heads + kv_head) * block,
                    pages_[id].precision};
}

}  // namespace strata::kv
