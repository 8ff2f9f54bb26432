// etcd's JWT auth tokens (--auth-token
// jwt,pub-key=FILE,priv-key=FILE,sign-method=ALG[,ttl=DURATION]): a token is a JSON Web Token
// naming the user, the auth revision it was issued at and when it expires, signed with this
// member's private key. Any member with the public key checks it without state, so a token outlives
// restarts and is good on every member given the same keys. Tokens issued before an auth change are
// refused with etcd's "revision of auth store is old" (Member::AuthenticatedUser), which etcd
// clients answer by authenticating again.
//
// Sign methods: RS256/384/512, PS256/384/512 (RSA keys) and ES256/384/512 (ECDSA keys). Without a
// private key a member only verifies. Thread-safe (immutable once loaded).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace leasehold::server {

struct JwtOptions {
  std::string sign_method;
  std::string public_key_file;   // PEM public key or certificate
  std::string private_key_file;  // PEM private key; empty: verify only
  absl::Duration ttl = absl::Minutes(5);
};

// Parses the flag's value after "jwt": comma-separated key=value options, as etcd's.
// InvalidArgument names an unknown option, a missing sign-method or public key, or a bad ttl.
[[nodiscard]] absl::StatusOr<JwtOptions> ParseJwtOptions(std::string_view flag_value);

class JwtTokens {
 public:
  struct Claims {
    std::string user;
    uint64_t revision = 0;
  };

  // Reads the keys; InvalidArgument when unreadable or not of the sign method's kind.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<JwtTokens>> Load(const JwtOptions& options);
  ~JwtTokens();

  // A token for `user` at auth revision `revision`, expiring ttl after `now`. FailedPrecondition
  // without a private key.
  [[nodiscard]] absl::StatusOr<std::string> Sign(std::string_view user, uint64_t revision,
                                                 absl::Time now) const;
  // The claims of a well-formed token with a good signature by our key, of our sign method, not
  // expired at `now`; nullopt for anything else.
  std::optional<Claims> Verify(std::string_view token, absl::Time now) const;

 private:
  struct Keys;
  JwtTokens(JwtOptions options, std::unique_ptr<Keys> keys);

  const JwtOptions options_;
  const std::unique_ptr<Keys> keys_;
};

}  // namespace leasehold::server
