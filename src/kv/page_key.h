// Content keys of full KV pages, the addresses of prefix caching (kv/prefix_index.h).
//
// A page's key is SHA-256, cut to 128 bits, of its parent's key and its tokens: the key names the
// whole prefix up to the page's end, as vLLM's block hashes do, so two sequences whose prompts
// agree up to a page boundary meet at the same keys. The chain starts at a root key that names
// everything else the stored values depend on (the model file, the KV precision, tiers and
// rotation, the attention numerics; see Engine::create), and a request's cache salt is folded into
// its root so that tenants never meet. A cryptographic hash keeps a client from steering a key
// onto another prefix's page; a hit also compares the page's tokens and its parent's key.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace strata::kv {

struct PageKey {
  std::array<uint8_t, 16> bytes{};

  bool operator==(const PageKey&) const = default;
  std::string hex() const;
};

struct PageKeyHash {
  size_t operator()(const PageKey& k) const;
};

// Incremental SHA-256 (OpenSSL's libcrypto).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  void update_u64(uint64_t v);  // little-endian, whatever the host
  std::array<uint8_t, 32> finish();

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

// The key of the page holding `tokens` (little-endian int32s) after the page keyed `parent`.
PageKey chain_key(const PageKey& parent, std::span<const int32_t> tokens);
// A root key folded with a text: a cache salt, or the description of what values depend on.
PageKey salted_key(const PageKey& root, std::string_view text);

}  // namespace strata::kv
