#include "tests/faults/watch_calls.h"

#include <string>

namespace leasehold::faults {

etcdserverpb::WatchRequest FilteredWatch(const WatchFilter& filter, int64_t start_revision) {
  etcdserverpb::WatchRequest request;
  auto* create = request.mutable_create_request();
  if (filter.prefix.empty()) {
    create->set_key(std::string(1, '\0'));
    create->set_range_end(std::string(1, '\0'));
  } else {
    create->set_key(filter.prefix);
    std::string end = filter.prefix;
    ++end.back();  // the prefixes used here never end in 0xff
    create->set_range_end(end);
  }
  create->set_start_revision(start_revision);
  create->set_prev_kv(filter.prev_kv);
  if (filter.no_put) create->add_filters(etcdserverpb::WatchCreateRequest::NOPUT);
  if (filter.no_delete) create->add_filters(etcdserverpb::WatchCreateRequest::NODELETE);
  return request;
}

etcdserverpb::WatchRequest WatchEverything(int64_t start_revision) {
  return FilteredWatch(WatchFilter{}, start_revision);
}

etcdserverpb::WatchRequest ProgressRequest() {
  etcdserverpb::WatchRequest request;
  request.mutable_progress_request();
  return request;
}

WatchedEvent ToWatchedEvent(const mvccpb::Event& e) {
  WatchedEvent w;
  w.revision = e.kv().mod_revision();
  w.key = e.kv().key();
  w.put = e.type() == mvccpb::Event::PUT;
  w.value = e.kv().value();
  w.create_revision = e.kv().create_revision();
  w.version = e.kv().version();
  w.has_prev = e.has_prev_kv();
  w.prev_value = e.prev_kv().value();
  w.prev_mod_revision = e.prev_kv().mod_revision();
  return w;
}

}  // namespace leasehold::faults
