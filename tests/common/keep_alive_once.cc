#include "tests/common/keep_alive_once.h"

#include <chrono>

#include <grpcpp/grpcpp.h>

namespace leasehold::testing {

int64_t KeepAliveOnce(etcdserverpb::Lease::Stub* stub, int64_t id, double deadline_seconds,
                      bool wait_for_ready) {
  grpc::ClientContext context;
  context.set_wait_for_ready(wait_for_ready);
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::microseconds(static_cast<int64_t>(deadline_seconds * 1e6)));
  auto stream = stub->LeaseKeepAlive(&context);
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(id);
  etcdserverpb::LeaseKeepAliveResponse response;
  int64_t ttl = -1;
  if (stream->Write(request) && stream->Read(&response))
    ttl = response.ttl() > 0 ? response.ttl() : 0;
  stream->WritesDone();
  context.TryCancel();
  stream->Finish().IgnoreError();
  return ttl;
}

}  // namespace leasehold::testing
