// The JSON gateway etcd serves on its client port (its grpc-gateway): POST /v3/<service>/<call>
// (or /v3beta/...) with the request in protobuf's JSON mapping — bytes in base64, 64-bit integers
// as strings, field names as in the .proto or in lowerCamelCase — answered with the response in
// the same mapping (.proto names, defaults left out, as etcd's gateway writes them), or with
// {"error","code","message"} and the HTTP status grpc-gateway gives the gRPC code.
//
// Each call goes through this member's own gRPC services, in process, so it gets exactly their
// validation, errors and behaviour. POST /v3/watch streams, as etcd's: each WatchResponse is a line
// {"result":...} of a chunked answer that lasts until the client hangs up. The other streaming
// calls (lease keep-alive, snapshot, observe) answer 501.
#pragma once

#include <memory>

#include <grpcpp/channel.h>
#include <grpcpp/generic/generic_stub.h>

#include "server/http/http_server.h"

namespace leasehold::server {

class JsonGateway {
 public:
  explicit JsonGateway(std::shared_ptr<grpc::Channel> in_process);

  // Whether `path` is one of the gateway's (a /v3/ or /v3beta/ path).
  static bool Serves(std::string_view path);
  void Handle(HttpRequest&& request, HttpServer::Respond respond);
  // The answer to a body over --max-request-bytes: 413 with etcd's "request is too large".
  static HttpResponse TooLarge();

 private:
  grpc::GenericStub stub_;
};

}  // namespace leasehold::server
