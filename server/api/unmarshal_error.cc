#include "server/api/unmarshal_error.h"

#include <string>
#include <string_view>

#include <google/protobuf/descriptor.h>
#include <grpcpp/support/status.h>

namespace leasehold::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

// "/etcdserverpb.KV/Range" -> "etcdserverpb.RangeRequest"; the method name itself when the
// generated pool does not know it.
std::string RequestTypeOf(std::string_view method) {
  if (!method.empty() && method.front() == '/') method.remove_prefix(1);
  std::string dotted(method);
  if (const size_t slash = dotted.find('/'); slash != std::string::npos) dotted[slash] = '.';
  const auto* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(dotted);
  return descriptor != nullptr ? descriptor->input_type()->full_name() : dotted;
}

class UnmarshalErrorInterceptor final : public grpc::experimental::Interceptor {
 public:
  UnmarshalErrorInterceptor(const char* method, bool unary)
      : method_(method != nullptr ? method : ""), unary_(unary) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // gRPC hands interceptors a null message when the request's bytes did not deserialize.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      unparsed_ = true;
    }
    if (unparsed_ && methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) &&
        methods->GetSendStatus().error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      const std::string type_name = RequestTypeOf(method_);
      methods->ModifySendStatus(
          grpc::Status(grpc::StatusCode::INTERNAL,
                       unary_ ? "grpc: error unmarshalling request: not a valid " + type_name
                              : StreamUnmarshalError(type_name)));
    }
    methods->Proceed();
  }

 private:
  const std::string_view method_;
  const bool unary_;
  bool unparsed_ = false;
};

class UnmarshalErrorInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    using Type = grpc::experimental::ServerRpcInfo::Type;
    if (info->type() != Type::UNARY && info->type() != Type::SERVER_STREAMING) return nullptr;
    return new UnmarshalErrorInterceptor(info->method(), info->type() == Type::UNARY);
  }
};

}  // namespace

std::string StreamUnmarshalError(std::string_view type_name) {
  return "grpc: failed to unmarshal the received message not a valid " + std::string(type_name);
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewUnmarshalErrorInterceptorFactory() {
  return std::make_unique<UnmarshalErrorInterceptorFactory>();
}

}  // namespace leasehold::server
