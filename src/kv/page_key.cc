#include "kv/page_key.h"

#include <openssl/evp.h>

#include <cassert>
#include <cstring>

namespace strata::kv {

std::string PageKey::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

size_t PageKeyHash::operator()(const PageKey& k) const {
  size_t h;  // the key is already uniform: any 8 of its bytes make a good bucket hash
  std::memcpy(&h, k.bytes.data(), sizeof h);
  return h;
}

struct Sha256::Context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {
  const int ok = ctx_->md != nullptr && EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1;
  assert(ok);
  (void)ok;
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, size_t size) { EVP_DigestUpdate(ctx_->md, data, size); }

void Sha256::update_u64(uint64_t v) {
  uint8_t le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(v >> (8 * i));
  update(le, sizeof le);
}

std::array<uint8_t, 32> Sha256::finish() {
  std::array<uint8_t, 32> digest{};
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_->md, digest.data(), &n);
  return digest;
}

namespace {

PageKey truncate(const std::array<uint8_t, 32>& digest) {
  PageKey key;
  std::memcpy(key.bytes.data(), digest.data(), key.bytes.size());
  return key;
}

}  // namespace

PageKey chain_key(const PageKey& parent, std::span<const int32_t> tokens) {
  Sha256 h;
  h.update("P");  // domain tags: no salted root reads as a page's tokens, or the other way
  h.update(parent.bytes.data(), parent.bytes.size());
  uint8_t le[4];
  for (int32_t t : tokens) {
    const auto u = static_cast<uint32_t>(t);
    for (int i = 0; i < 4; ++i) le[i] = static_cast<uint8_t>(u >> (8 * i));
    h.update(le, sizeof le);
  }
  return truncate(h.finish());
}

PageKey salted_key(const PageKey& root, std::string_view text) {
  Sha256 h;
  h.update("S");
  h.update(root.bytes.data(), root.bytes.size());
  h.update(text);
  return truncate(h.finish());
}

}  // namespace strata::kv
