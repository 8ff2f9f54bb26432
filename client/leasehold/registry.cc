#include "client/leasehold/registry.h"

#include "client/leasehold/client.h"

namespace leasehold {
namespace {

bool ValidName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos;
}

Instance FromKey(const std::string& prefix, const std::string& service,
                 const mvccpb::KeyValue& kv) {
  return Instance{service, kv.key().substr(prefix.size()), kv.value()};
}

}  // namespace

Registry::Registry(Client* client, std::string root) : client_(client), root_(std::move(root)) {}

absl::StatusOr<std::unique_ptr<Registration>> Registry::Register(const std::string& service,
                                                                 const std::string& instance,
                                                                 const std::string& value,
                                                                 int64_t ttl_seconds) {
  if (!ValidName(service) || !ValidName(instance)) {
    return absl::InvalidArgumentError(
        "service and instance names must be non-empty and contain no '/'");
  }
  auto lease = ManagedLease::Grant(client_, ttl_seconds);
  if (!lease.ok()) return lease.status();
  const std::string key = Prefix(service) + instance;
  auto put = client_->Put(key, value, (*lease)->id());
  if (!put.ok()) return put.status();  // the lease is revoked as `lease` goes
  return std::make_unique<Registration>(*std::move(lease), key);
}

absl::StatusOr<std::vector<Instance>> Registry::List(const std::string& service,
                                                     int64_t* revision) {
  if (!ValidName(service))
    return absl::InvalidArgumentError("service names must be non-empty and contain no '/'");
  const std::string prefix = Prefix(service);
  auto response = client_->GetPrefix(prefix);
  if (!response.ok()) return response.status();
  std::vector<Instance> instances;
  for (const auto& kv : response->kvs()) instances.push_back(FromKey(prefix, service, kv));
  if (revision != nullptr) *revision = response->header().revision();
  return instances;
}

absl::StatusOr<std::unique_ptr<Watch>> Registry::WatchService(const std::string& service,
                                                              std::vector<Instance>* initial,
                                                              ChangeHandler on_change) {
  int64_t revision = 0;
  auto listed = List(service, &revision);
  if (!listed.ok()) return listed.status();
  *initial = *std::move(listed);
  const std::string prefix = Prefix(service);
  etcdserverpb::WatchCreateRequest request;
  request.set_key(prefix);
  request.set_range_end(PrefixEnd(prefix));
  request.set_start_revision(revision + 1);  // exactly the changes after the listed view
  return client_->StartWatch(
      request, [prefix, service, on_change](const etcdserverpb::WatchResponse& response) {
        for (const auto& e : response.events()) {
          on_change(FromKey(prefix, service, e.kv()), e.type() == mvccpb::Event::PUT);
        }
      });
}

}  // namespace leasehold
