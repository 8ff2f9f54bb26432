#include "server/command/cluster_config.h"

#include <algorithm>

#include <openssl/evp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace leasehold::server {
namespace {

// The first 8 bytes of `data`'s SHA-1, read big-endian.
uint64_t Sha1Prefix(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha1(), nullptr);
  uint64_t prefix = 0;
  for (int i = 0; i < 8; ++i) prefix = (prefix << 8) | digest[i];
  return prefix;
}

}  // namespace

uint64_t MemberIdOf(std::vector<std::string> peer_urls, const std::string& token) {
  std::sort(peer_urls.begin(), peer_urls.end());
  const uint64_t id = Sha1Prefix(absl::StrCat(absl::StrJoin(peer_urls, ""), token));
  return id == 0 ? 1 : id;  // 0 means "no member" everywhere
}

uint64_t ClusterIdOf(std::vector<uint64_t> member_ids) {
  std::sort(member_ids.begin(), member_ids.end());
  std::string bytes;
  for (uint64_t id : member_ids) {
    for (int shift = 56; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(id >> shift));
  }
  return Sha1Prefix(bytes);
}

absl::StatusOr<ClusterConfig> BuildClusterConfig(const Flags& flags) {
  // name -> peer URLs, in the order given.
  std::map<std::string, std::vector<std::string>> urls_by_name;
  for (absl::string_view pair :
       absl::StrSplit(flags.initial_cluster, ',', absl::SkipWhitespace())) {
    std::vector<std::string> parts = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--initial-cluster: '", pair, "' is not name=url"));
    }
    if (!GrpcAddressOfUrl(parts[1]).ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--initial-cluster: bad URL '", parts[1], "'"));
    }
    urls_by_name[parts[0]].push_back(parts[1]);
  }
  auto self = urls_by_name.find(flags.name);
  if (self == urls_by_name.end()) {
    return absl::InvalidArgumentError(absl::StrCat("--initial-cluster has no member named '",
                                                   flags.name, "' (the --name of this member)"));
  }
  std::vector<std::string> mine = self->second, advertised = flags.initial_advertise_peer_urls;
  std::sort(mine.begin(), mine.end());
  std::sort(advertised.begin(), advertised.end());
  if (mine != advertised) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--initial-cluster must list ", flags.name, " with its ", "--initial-advertise-peer-urls (",
        absl::StrJoin(advertised, ","), "), not ", absl::StrJoin(mine, ",")));
  }
  ClusterConfig config;
  for (const auto& [name, urls] : urls_by_name) {
    internalpb::MemberRecord record;
    record.set_id(MemberIdOf(urls, flags.initial_cluster_token));
    record.set_name(name);
    for (const auto& url : urls) record.add_peer_urls(url);
    if (config.peer_urls.contains(record.id())) {
      return absl::InvalidArgumentError(
          absl::StrCat("--initial-cluster names the same peer URLs twice (", name, ")"));
    }
    config.peer_urls[record.id()] = urls.front();
    if (name == flags.name) config.self_id = record.id();
    config.members.push_back(std::move(record));
  }
  std::sort(config.members.begin(), config.members.end(),
            [](const auto& a, const auto& b) { return a.id() < b.id(); });
  // Founders agree on it from the same flags; a member joining later learns it from the cluster
  // (DiscoverExistingCluster).
  std::vector<uint64_t> ids;
  for (const auto& member : config.members) ids.push_back(member.id());
  config.cluster_id = ClusterIdOf(std::move(ids));
  return config;
}

}  // namespace leasehold::server
