// Limits a hostile client runs into on the client port: --max-concurrent-streams caps the calls
// one connection has open, while other connections are served as usual.
#include <chrono>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "test_server.h"

namespace leasehold {
namespace {

using testing::TestServer;
using WatchCall = grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>;

struct OpenWatch {
  grpc::ClientContext context;
  std::unique_ptr<WatchCall> call;
};

// Opens a watch on `stub` and waits up to `wait` for its "created" answer.
bool OpenAndCreate(etcdserverpb::Watch::Stub& stub, OpenWatch& watch,
                   std::chrono::milliseconds wait) {
  watch.context.set_deadline(std::chrono::system_clock::now() + wait);
  watch.call = stub.Watch(&watch.context);
  etcdserverpb::WatchRequest request;
  request.mutable_create_request()->set_key("k");
  if (!watch.call->Write(request)) return false;
  etcdserverpb::WatchResponse response;
  return watch.call->Read(&response) && response.created();
}

TEST(LimitsTest, MaxConcurrentStreamsCapsOneConnectionOnly) {
  TestServer server({"--max-concurrent-streams=2"});
  auto channel = grpc::CreateChannel(server.endpoint(), grpc::InsecureChannelCredentials());
  auto stub = etcdserverpb::Watch::NewStub(channel);
  OpenWatch first, second, third;
  ASSERT_TRUE(OpenAndCreate(*stub, first, std::chrono::seconds(30)));
  ASSERT_TRUE(OpenAndCreate(*stub, second, std::chrono::seconds(30)));
  // The third stream on the same connection is not served while two are open.
  EXPECT_FALSE(OpenAndCreate(*stub, third, std::chrono::milliseconds(1500)));
  // Another connection is.
  grpc::ChannelArguments separate;
  separate.SetInt("leasehold.test.separate", 1);  // a distinct subchannel, not the shared one
  auto other_stub = etcdserverpb::Watch::NewStub(
      grpc::CreateCustomChannel(server.endpoint(), grpc::InsecureChannelCredentials(), separate));
  OpenWatch elsewhere;
  EXPECT_TRUE(OpenAndCreate(*other_stub, elsewhere, std::chrono::seconds(10)));
  // Once a stream ends, the connection takes a new one.
  first.context.TryCancel();
  first.call->Finish();
  OpenWatch fourth;
  EXPECT_TRUE(OpenAndCreate(*stub, fourth, std::chrono::seconds(10)));
  for (OpenWatch* w : {&second, &third, &fourth, &elsewhere}) {
    w->context.TryCancel();
    w->call->Finish();
  }
}

}  // namespace
}  // namespace leasehold
