// etcdserverpb.KV: reads are served from the local state machine; writes are proposed.
#pragma once

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/member/member.h"

namespace leasehold::server {

class KvService final : public etcdserverpb::KV::CallbackService {
 public:
  explicit KvService(Member* member) : member_(member) {}

  grpc::ServerUnaryReactor* Range(grpc::CallbackServerContext* context,
                                  const etcdserverpb::RangeRequest* request,
                                  etcdserverpb::RangeResponse* response) override;
  grpc::ServerUnaryReactor* Put(grpc::CallbackServerContext* context,
                                const etcdserverpb::PutRequest* request,
                                etcdserverpb::PutResponse* response) override;
  grpc::ServerUnaryReactor* DeleteRange(grpc::CallbackServerContext* context,
                                        const etcdserverpb::DeleteRangeRequest* request,
                                        etcdserverpb::DeleteRangeResponse* response) override;
  grpc::ServerUnaryReactor* Txn(grpc::CallbackServerContext* context,
                                const etcdserverpb::TxnRequest* request,
                                etcdserverpb::TxnResponse* response) override;
  grpc::ServerUnaryReactor* Compact(grpc::CallbackServerContext* context,
                                    const etcdserverpb::CompactionRequest* request,
                                    etcdserverpb::CompactionResponse* response) override;

 private:
  Member* member_;
};

}  // namespace leasehold::server
