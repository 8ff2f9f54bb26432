#include "server/auth/token_store.h"

namespace leasehold::server {

void TokenStore::Add(const std::string& token, Issued issued, absl::Time now) {
  absl::MutexLock lock(&mu_);
  SweepLocked(now);
  tokens_[token] = Entry{std::move(issued), now + ttl_};
}

std::optional<TokenStore::Issued> TokenStore::Use(const std::string& token, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = tokens_.find(token);
  if (it == tokens_.end()) return std::nullopt;
  if (it->second.expires <= now) {
    tokens_.erase(it);
    return std::nullopt;
  }
  it->second.expires = now + ttl_;
  return it->second.issued;
}

size_t TokenStore::size() const {
  absl::MutexLock lock(&mu_);
  return tokens_.size();
}

void TokenStore::SweepLocked(absl::Time now) {
  // Expired tokens nobody presents again would otherwise stay: drop them at most once a TTL.
  if (now < next_sweep_) return;
  next_sweep_ = now + ttl_;
  absl::erase_if(tokens_, [now](const auto& entry) { return entry.second.expires <= now; });
}

}  // namespace leasehold::server
