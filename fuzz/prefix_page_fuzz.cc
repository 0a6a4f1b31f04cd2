// libFuzzer target: parses arbitrary bytes as a saved prefix-cache page (--kv-cache-dir files,
// kv/prefix_store.h). The parser never crashes or reads out of bounds; a page it accepts has the
// engine's shape, its page size of tokens, page data of its precision's size, and a key that is
// the chain key of its parent and tokens.
#include <cstddef>
#include <cstdint>
#include <span>

#include "kv/prefix_store.h"

namespace {

void check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::kv;
  PageKey root;
  root.bytes.fill(7);
  const KvShape shape{/*n_layers=*/2, /*n_kv_heads=*/2, /*head_dim=*/32, /*page_size=*/8};
  strata::Result<SavedPage> page = parse_saved_page(std::span(data, size), root, shape);
  if (!page.ok()) {
    check(!page.error().message.empty());
    return 0;
  }
  check(page->entry.tokens.size() == shape.page_size);
  check(page->data.size() == page_bytes(shape, page->precision));
  check(chain_key(page->entry.parent, page->entry.tokens) == page->entry.key);
  return 0;
}
