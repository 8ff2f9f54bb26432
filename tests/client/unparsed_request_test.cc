// What a request whose bytes do not parse as its method's message gets: etcd's INTERNAL error with
// grpc-go's leading text, never UNIMPLEMENTED (which would tell a client that the method does not
// exist), and the server goes on serving. The generated stubs can only send well-formed messages,
// so these calls are made with raw bytes.
#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <gtest/gtest.h>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "test_server.h"

namespace leasehold {
namespace {

using testing::TestServer;

// Not a valid message of any of the methods below: a field with wire type 7, which does not exist.
const std::string kGarbage("\xff\xff\xff\xff", 4);

grpc::ByteBuffer Bytes(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::shared_ptr<grpc::Channel> ChannelTo(const TestServer& server) {
  return grpc::CreateChannel(server.endpoint(), grpc::InsecureChannelCredentials());
}

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
}

grpc::Status RawUnaryCall(grpc::Channel* channel, const std::string& method,
                          const std::string& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::ByteBuffer response;
  return grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel, grpc::internal::RpcMethod(method.c_str(), grpc::internal::RpcMethod::NORMAL_RPC),
      &context, Bytes(request), &response);
}

TEST(UnparsedRequestTest, AUnaryCallGetsEtcdsInternalErrorNamingTheMessageType) {
  TestServer server;
  auto channel = ChannelTo(server);
  struct Case {
    const char* method;
    const char* request_type;
  };
  // One method of each service kind: KV, Lease (partly served raw), Maintenance, Lock.
  for (const Case& c : {Case{"/etcdserverpb.KV/Range", "etcdserverpb.RangeRequest"},
                        Case{"/etcdserverpb.Lease/LeaseGrant", "etcdserverpb.LeaseGrantRequest"},
                        Case{"/etcdserverpb.Maintenance/Status", "etcdserverpb.StatusRequest"},
                        Case{"/v3lockpb.Lock/Lock", "v3lockpb.LockRequest"}}) {
    const grpc::Status status = RawUnaryCall(channel.get(), c.method, kGarbage);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL) << c.method;
    EXPECT_EQ(status.error_message(),
              std::string("grpc: error unmarshalling request: not a valid ") + c.request_type)
        << c.method;
  }
  // A well-formed request on the same connection is served, and an empty one is a valid message.
  etcdserverpb::PutRequest put;
  put.set_key("k");
  EXPECT_TRUE(RawUnaryCall(channel.get(), "/etcdserverpb.KV/Put", put.SerializeAsString()).ok());
  EXPECT_TRUE(RawUnaryCall(channel.get(), "/etcdserverpb.Maintenance/Status", "").ok());
}

TEST(UnparsedRequestTest, AServerStreamingCallEndsWithEtcdsStreamError) {
  TestServer server;
  auto channel = ChannelTo(server);
  grpc::ClientContext context;
  SetDeadline(&context);
  const grpc::internal::RpcMethod method("/etcdserverpb.Maintenance/Snapshot",
                                         grpc::internal::RpcMethod::SERVER_STREAMING);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel.get(), method, &context,
                                                                    Bytes(kGarbage)));
  grpc::ByteBuffer chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(
      status.error_message(),
      "grpc: failed to unmarshal the received message not a valid etcdserverpb.SnapshotRequest");
}

using RawStream = grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

// A bidirectional stream of `method` ("/package.Service/Method") that sends and receives raw bytes.
std::unique_ptr<RawStream> OpenRawStream(grpc::Channel* channel, const char* method,
                                         grpc::ClientContext* context) {
  const grpc::internal::RpcMethod rpc(method, grpc::internal::RpcMethod::BIDI_STREAMING);
  return std::unique_ptr<RawStream>(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
          channel, rpc, context));
}

std::unique_ptr<RawStream> OpenKeepAlive(grpc::Channel* channel, grpc::ClientContext* context) {
  return OpenRawStream(channel, "/etcdserverpb.Lease/LeaseKeepAlive", context);
}

TEST(UnparsedRequestTest, AWatchRequestThatDoesNotParseEndsTheStream) {
  TestServer server;
  auto channel = ChannelTo(server);
  grpc::ClientContext context;
  SetDeadline(&context);
  auto stream = OpenRawStream(channel.get(), "/etcdserverpb.Watch/Watch", &context);
  ASSERT_TRUE(stream->Write(Bytes(kGarbage)));
  grpc::ByteBuffer response;
  EXPECT_FALSE(stream->Read(&response));
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message().rfind("grpc: failed to unmarshal the received message", 0), 0u)
      << status.error_message();

  // Another stream is served as usual.
  grpc::ClientContext after_context;
  SetDeadline(&after_context);
  auto after = etcdserverpb::Watch::NewStub(channel)->Watch(&after_context);
  etcdserverpb::WatchRequest create;
  create.mutable_create_request()->set_key("k");
  ASSERT_TRUE(after->Write(create));
  etcdserverpb::WatchResponse created;
  ASSERT_TRUE(after->Read(&created));
  EXPECT_TRUE(created.created());
  after_context.TryCancel();
}

std::string KeepAliveOf(int64_t lease) {
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease);
  return request.SerializeAsString();
}

// Reads one keep-alive answer; its TTL, or -1 if none came or it does not parse.
int64_t ReadTtl(RawStream& stream) {
  grpc::ByteBuffer bytes;
  etcdserverpb::LeaseKeepAliveResponse response;
  if (!stream.Read(&bytes) ||
      !grpc::SerializationTraits<etcdserverpb::LeaseKeepAliveResponse>::Deserialize(&bytes,
                                                                                    &response)
           .ok()) {
    return -1;
  }
  return response.ttl();
}

TEST(UnparsedRequestTest, AKeepAliveStreamAnswersWhatCameBeforeThenEndsWithEtcdsStreamError) {
  TestServer server;
  auto channel = ChannelTo(server);
  grpc::ClientContext grant_context;
  SetDeadline(&grant_context);
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(60);
  etcdserverpb::LeaseGrantResponse granted;
  ASSERT_TRUE(
      etcdserverpb::Lease::NewStub(channel)->LeaseGrant(&grant_context, grant, &granted).ok());

  grpc::ClientContext context;
  SetDeadline(&context);
  auto stream = OpenKeepAlive(channel.get(), &context);
  ASSERT_TRUE(stream->Write(Bytes(KeepAliveOf(granted.id()))));
  EXPECT_EQ(ReadTtl(*stream), 60);
  ASSERT_TRUE(stream->Write(Bytes(kGarbage)));
  EXPECT_EQ(ReadTtl(*stream), -1);
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(),
            "grpc: failed to unmarshal the received message not a valid "
            "etcdserverpb.LeaseKeepAliveRequest");

  // A new stream renews the same lease, and a half-close still ends a stream OK.
  grpc::ClientContext again_context;
  SetDeadline(&again_context);
  auto again = OpenKeepAlive(channel.get(), &again_context);
  ASSERT_TRUE(again->Write(Bytes(KeepAliveOf(granted.id()))));
  EXPECT_EQ(ReadTtl(*again), 60);
  ASSERT_TRUE(again->WritesDone());
  EXPECT_EQ(ReadTtl(*again), -1);
  EXPECT_TRUE(again->Finish().ok());
}

}  // namespace
}  // namespace leasehold
