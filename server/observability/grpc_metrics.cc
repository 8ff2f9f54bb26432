#include "server/observability/grpc_metrics.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <string>
#include <string_view>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message_lite.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "server/observability/metrics.h"

namespace leasehold::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

// Go's names for the status codes, in code order, as the grpc_code label carries them.
constexpr std::array<const char*, 17> kCodeNames = {
    "OK",       "Canceled",        "Unknown",          "InvalidArgument",   "DeadlineExceeded",
    "NotFound", "AlreadyExists",   "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
    "Aborted",  "OutOfRange",      "Unimplemented",    "Internal",          "Unavailable",
    "DataLoss", "Unauthenticated",
};

struct MethodCounters {
  prometheus::Counter* started;
  prometheus::Counter* received;
  prometheus::Counter* sent;
  std::array<prometheus::Counter*, kCodeNames.size()> handled;
  prometheus::Histogram* handling = nullptr;  // with --metrics extensive
};

const char* TypeName(bool client_streaming, bool server_streaming) {
  if (client_streaming && server_streaming) return "bidi_stream";
  if (client_streaming) return "client_stream";
  if (server_streaming) return "server_stream";
  return "unary";
}

// The counters of each method, made on first use (or up front for etcd's own services).
class Counters {
 public:
  // The first call decides whether handling times are measured too.
  static Counters& Get(bool handling_time = false) {
    static Counters* counters = new Counters(handling_time);
    return *counters;
  }

  // `path` is "/package.Service/Method".
  const MethodCounters& For(std::string_view path, const char* type) {
    const absl::string_view key(path.data(), path.size());
    {
      // Every call looks its method up; only a method's first call adds it.
      absl::ReaderMutexLock lock(&mu_);
      if (auto it = by_path_.find(key); it != by_path_.end()) return it->second;
    }
    absl::MutexLock lock(&mu_);
    auto it = by_path_.find(key);
    if (it != by_path_.end()) return it->second;
    std::string_view rest = path.substr(path.empty() || path.front() != '/' ? 0 : 1);
    const size_t slash = rest.find('/');
    const std::string service(rest.substr(0, slash)),
        method(slash == std::string_view::npos ? "" : rest.substr(slash + 1));
    Metrics& m = Metrics::Get();
    const std::map<std::string, std::string> labels = {
        {"grpc_type", type}, {"grpc_service", service}, {"grpc_method", method}};
    MethodCounters c{
        &m.GrpcStarted().Add(labels), &m.GrpcReceived().Add(labels), &m.GrpcSent().Add(labels), {}};
    for (size_t code = 0; code < kCodeNames.size(); ++code) {
      auto with_code = labels;
      with_code["grpc_code"] = kCodeNames[code];
      c.handled[code] = &m.GrpcHandled().Add(with_code);
    }
    if (handling_time_) {
      // Prometheus' default buckets, as grpc-go's interceptors use them.
      c.handling = &m.GrpcHandlingSeconds().Add(
          labels, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                          1, 2.5, 5, 10});
    }
    return by_path_.emplace(std::string(path), c).first->second;
  }

 private:
  explicit Counters(bool handling_time) : handling_time_(handling_time) {
    const auto* pool = google::protobuf::DescriptorPool::generated_pool();
    for (const char* name :
         {"etcdserverpb.KV", "etcdserverpb.Watch", "etcdserverpb.Lease", "etcdserverpb.Cluster",
          "etcdserverpb.Maintenance", "etcdserverpb.Auth"}) {
      const auto* service = pool->FindServiceByName(name);
      if (service == nullptr) continue;
      for (int i = 0; i < service->method_count(); ++i) {
        const auto* method = service->method(i);
        For("/" + service->full_name() + "/" + method->name(),
            TypeName(method->client_streaming(), method->server_streaming()));
      }
    }
  }

  const bool handling_time_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, MethodCounters> by_path_ ABSL_GUARDED_BY(mu_);
};

class GrpcMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  GrpcMetricsInterceptor(const MethodCounters& counters, bool streaming, bool raw)
      : counters_(counters), streaming_(streaming), raw_(raw) {
    counters_.started->Increment();
    if (counters_.handling != nullptr) started_at_ = std::chrono::steady_clock::now();
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      // etcd's clients name their API version in the call's metadata.
      std::string version = "unknown";
      if (const auto* metadata = methods->GetRecvInitialMetadata(); metadata != nullptr) {
        if (auto it = metadata->find("client-api-version"); it != metadata->end())
          version.assign(it->second.data(), it->second.size());
      }
      Metrics::Get().CountClientRequest(streaming_, version);
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() != nullptr) {
      counters_.received->Increment();
      // A raw method's request is the bytes that arrived; any other is a parsed protobuf message
      // (a generated message's only base is MessageLite), whose size is theirs.
      const void* message = methods->GetRecvMessage();
      Metrics::Get().CountClientBytes(
          raw_ ? static_cast<const grpc::ByteBuffer*>(message)->Length()
               : static_cast<const google::protobuf::MessageLite*>(message)->ByteSizeLong(),
          0);
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      counters_.sent->Increment();
      // Serialized here rather than after the interceptors: the same one encoding is sent.
      if (const grpc::ByteBuffer* bytes = methods->GetSerializedSendMessage(); bytes != nullptr)
        Metrics::Get().CountClientBytes(0, bytes->Length());
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const size_t code = static_cast<size_t>(methods->GetSendStatus().error_code());
      counters_.handled[code < kCodeNames.size() ? code : 2]
          ->Increment();  // anything else: Unknown
      if (counters_.handling != nullptr) {
        counters_.handling->Observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at_).count());
      }
    }
    methods->Proceed();
  }

 private:
  const MethodCounters& counters_;
  const bool streaming_;
  const bool raw_;
  std::chrono::steady_clock::time_point started_at_;
};

class GrpcMetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit GrpcMetricsInterceptorFactory(std::vector<std::string> raw_methods)
      : raw_methods_(std::move(raw_methods)) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    using Type = grpc::experimental::ServerRpcInfo::Type;
    const Type type = info->type();
    const char* name = TypeName(type == Type::CLIENT_STREAMING || type == Type::BIDI_STREAMING,
                                type == Type::SERVER_STREAMING || type == Type::BIDI_STREAMING);
    const std::string method = info->method() != nullptr ? info->method() : "";
    return new GrpcMetricsInterceptor(
        Counters::Get().For(method, name), type != Type::UNARY,
        std::find(raw_methods_.begin(), raw_methods_.end(), method) != raw_methods_.end());
  }

 private:
  const std::vector<std::string> raw_methods_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewGrpcMetricsInterceptorFactory(bool handling_time, std::vector<std::string> raw_methods) {
  Counters::Get(handling_time);  // etcd's services' series exist from the start
  return std::make_unique<GrpcMetricsInterceptorFactory>(std::move(raw_methods));
}

}  // namespace leasehold::server
