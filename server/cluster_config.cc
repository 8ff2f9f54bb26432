#include "server/cluster_config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace leasehold::server {
namespace {

// FNV-1a: stable across processes and builds (absl::Hash is seeded per process).
uint64_t StableHash(std::string_view data) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

uint64_t MemberIdOf(std::vector<std::string> peer_urls, const std::string& token) {
  std::sort(peer_urls.begin(), peer_urls.end());
  const uint64_t id = StableHash(absl::StrCat(absl::StrJoin(peer_urls, ","), "|", token));
  return id == 0 ? 1 : id;
}

absl::StatusOr<ClusterConfig> BuildClusterConfig(const Flags& flags) {
  // name -> peer URLs, in the order given.
  std::map<std::string, std::vector<std::string>> urls_by_name;
  for (absl::string_view pair : absl::StrSplit(flags.initial_cluster, ',', absl::SkipWhitespace())) {
    std::vector<std::string> parts = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--initial-cluster: '", pair, "' is not name=url"));
    }
    if (!HostPortOfUrl(parts[1]).ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--initial-cluster: bad URL '", parts[1], "'"));
    }
    urls_by_name[parts[0]].push_back(parts[1]);
  }
  auto self = urls_by_name.find(flags.name);
  if (self == urls_by_name.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--initial-cluster has no member named '", flags.name, "' (the --name of this member)"));
  }
  std::vector<std::string> mine = self->second, advertised = flags.initial_advertise_peer_urls;
  std::sort(mine.begin(), mine.end());
  std::sort(advertised.begin(), advertised.end());
  if (mine != advertised) {
    return absl::InvalidArgumentError(absl::StrCat("--initial-cluster must list ", flags.name, " with its ",
                                                   "--initial-advertise-peer-urls (", absl::StrJoin(advertised, ","),
                                                   "), not ", absl::StrJoin(mine, ",")));
  }
  ClusterConfig config;
  for (const auto& [name, urls] : urls_by_name) {
    internalpb::MemberRecord record;
    record.set_id(MemberIdOf(urls, flags.initial_cluster_token));
    record.set_name(name);
    for (const auto& url : urls) record.add_peer_urls(url);
    if (config.peer_urls.contains(record.id())) {
      return absl::InvalidArgumentError(absl::StrCat("--initial-cluster names the same peer URLs twice (", name, ")"));
    }
    config.peer_urls[record.id()] = urls.front();
    if (name == flags.name) config.self_id = record.id();
    config.members.push_back(std::move(record));
  }
  std::sort(config.members.begin(), config.members.end(),
            [](const auto& a, const auto& b) { return a.id() < b.id(); });
  // The token alone names the cluster, so a member joining later (whose --initial-cluster lists a
  // different set of members) computes the same id as the founders.
  config.cluster_id = StableHash(absl::StrCat("cluster|", flags.initial_cluster_token)) | 1;
  return config;
}

}  // namespace leasehold::server
