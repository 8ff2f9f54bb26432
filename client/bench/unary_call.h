// One asynchronous unary call on gRPC's callback API, with its context, request and response kept
// alive until the callback has run.
#pragma once

#include <chrono>
#include <functional>

#include <grpcpp/grpcpp.h>

namespace leasehold::bench {

inline constexpr auto kCallDeadline = std::chrono::seconds(30);

template <typename Request, typename Response>
struct UnaryCall {
  grpc::ClientContext context;
  Request request;
  Response response;
};

// `start(context, request, response, callback)` issues the call (e.g. a stub's async() method);
// `then(status, response)` runs once it completes.
template <typename Request, typename Response, typename Start, typename Then>
void CallUnary(Start start, Request request, Then then) {
  auto* call = new UnaryCall<Request, Response>;
  call->request = std::move(request);
  call->context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  start(&call->context, &call->request, &call->response,
        [call, then = std::move(then)](grpc::Status status) {
          then(status, call->response);
          delete call;
        });
}

}  // namespace leasehold::bench
