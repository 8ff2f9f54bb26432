#include "client/bench/connections.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace leasehold::bench {

namespace {

std::string ReadFileOrExit(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "leasehold-bench: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  return contents.str();
}

std::shared_ptr<grpc::ChannelCredentials> CredentialsFor(const Options& options) {
  if (!options.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!options.cacert.empty()) ssl.pem_root_certs = ReadFileOrExit(options.cacert);
  if (!options.cert.empty()) {
    ssl.pem_cert_chain = ReadFileOrExit(options.cert);
    ssl.pem_private_key = ReadFileOrExit(options.key);
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace

Connections::Connections(const Options& options) {
  const std::shared_ptr<grpc::ChannelCredentials> credentials = CredentialsFor(options);
  for (int i = 0; i < options.conns; ++i) {
    grpc::ChannelArguments args;
    // A private subchannel pool gives every channel its own TCP connection.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(-1);
    const std::string& endpoint = options.endpoints[i % options.endpoints.size()];
    auto channel = grpc::CreateCustomChannel(endpoint, credentials, args);
    kv_.push_back(etcdserverpb::KV::NewStub(channel));
    lease_.push_back(etcdserverpb::Lease::NewStub(channel));
    watch_.push_back(etcdserverpb::Watch::NewStub(channel));
    lock_.push_back(v3lockpb::Lock::NewStub(channel));
    channels_.push_back(std::move(channel));
  }
}

bool Connections::WaitReady(double seconds) {
  auto deadline = std::chrono::system_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  for (auto& channel : channels_) {
    if (!channel->WaitForConnected(deadline)) return false;
  }
  return true;
}

}  // namespace leasehold::bench
