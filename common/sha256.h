// SHA-256 over a stream of byte strings (OpenSSL's EVP interface): backup digests and the
// Maintenance hashes.
#pragma once

#include <string>
#include <string_view>

#include <openssl/evp.h>

namespace leasehold::storage {

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(std::string_view data) { EVP_DigestUpdate(ctx_, data.data(), data.size()); }
  // The 32-byte digest of everything updated so far; call once.
  std::string Final() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(ctx_, digest, &length);
    return std::string(reinterpret_cast<char*>(digest), length);
  }

 private:
  EVP_MD_CTX* ctx_;
};

}  // namespace leasehold::storage
