#include "server/auth/password.h"

#include <crypt.h>

#include <memory>

#include <openssl/crypto.h>

namespace leasehold::server {

absl::StatusOr<std::string> HashPassword(std::string_view password, int cost) {
  if (cost < 4 || cost > 31) return absl::InvalidArgumentError("bcrypt cost must be within 4..31");
  if (password.find('\0') != std::string_view::npos)
    return absl::InvalidArgumentError("password contains a NUL byte");
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  // A null random source makes libxcrypt draw the salt from the operating system.
  if (crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, setting,
                       sizeof setting) == nullptr) {
    return absl::InternalError("cannot make a bcrypt salt");
  }
  auto data = std::make_unique<crypt_data>();  // ~32 KiB: not for the stack
  const std::string plain(password);
  const char* hashed = crypt_rn(plain.c_str(), setting, data.get(), sizeof *data);
  if (hashed == nullptr || hashed[0] == '*') return absl::InternalError("bcrypt failed");
  return std::string(hashed);
}

bool PasswordMatches(std::string_view password, const std::string& hash) {
  if (hash.empty() || password.find('\0') != std::string_view::npos) return false;
  auto data = std::make_unique<crypt_data>();
  const std::string plain(password);
  const char* hashed = crypt_rn(plain.c_str(), hash.c_str(), data.get(), sizeof *data);
  if (hashed == nullptr || hashed[0] == '*') return false;
  const std::string_view computed(hashed);
  return computed.size() == hash.size() &&
         CRYPTO_memcmp(computed.data(), hash.data(), hash.size()) == 0;
}

}  // namespace leasehold::server
