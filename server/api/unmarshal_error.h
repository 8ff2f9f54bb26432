// A request whose bytes do not parse as the method's message. etcd (grpc-go) answers it with
// INTERNAL and "grpc: error unmarshalling request: <cause>" (unary calls) or "grpc: failed to
// unmarshal the received message <cause>" (streams); gRPC C++ answers a unary or server-streaming
// call's unparsed request with UNIMPLEMENTED and no message, which tells a client that the method
// does not exist. The interceptor made here restores etcd's code and leading text for those two
// kinds of call (the cause is worded our way: the message type that did not parse). Bidirectional
// streams (Watch, LeaseKeepAlive) read raw bytes and answer for themselves.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <grpcpp/support/server_interceptor.h>

namespace leasehold::server {

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewUnmarshalErrorInterceptorFactory();

// etcd's text for a stream's message that does not parse as `type_name` (a full protobuf name).
std::string StreamUnmarshalError(std::string_view type_name);

}  // namespace leasehold::server
