// etcd's per-method gRPC metrics (grpc-go's Prometheus interceptors, which etcd installs): calls
// started and handled (by status code), and stream messages received and sent, labelled
// grpc_type/grpc_service/grpc_method[/grpc_code] as etcd's dashboards read them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/support/server_interceptor.h>

namespace leasehold::server {

// Counts every call of the server it is installed on. The methods of the services named in the
// process's protobuf descriptors (etcd's KV, Watch, Lease, Cluster, Maintenance and Auth) have
// their series from the start, at zero, as etcd registers them. With `handling_time` (etcd's
// --metrics extensive), each call's time until its status is sent goes to
// grpc_server_handling_seconds too. Each message's bytes go to etcd's
// etcd_network_client_grpc_{received,sent}_bytes_total, and each call to
// etcd_server_client_requests_total. `raw_methods` names the methods ("/package.Service/Method")
// whose handlers take their requests unparsed (grpc::ByteBuffer). One server per process.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewGrpcMetricsInterceptorFactory(bool handling_time, std::vector<std::string> raw_methods);

}  // namespace leasehold::server
