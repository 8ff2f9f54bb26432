// Runs RPC handlers that must block — waiting for a lock or for leadership, which may take as long
// as the holder keeps it — on threads of their own, so gRPC's callback threads never block. The
// caller's cancellation (or deadline) cancels the handler's token; a waiting handler then gives up
// its place. At most `max_running` handlers run at once; more are refused with RESOURCE_EXHAUSTED,
// so a hostile client cannot make the server spawn threads without bound. Handlers get the member's
// in-process client (set once the server exists; calls before that are refused with "etcdserver:
// not ready").
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "client/leasehold/cancellation.h"

namespace leasehold {
class Client;
}

namespace leasehold::server {

// Drops one of an object's two owners (its handler thread and gRPC); the last one deletes it.
template <typename T>
void DropOwner(std::atomic<int>& owners, T* self) {
  if (owners.fetch_sub(1, std::memory_order_acq_rel) == 1) delete self;
}

class BlockingCalls {
 public:
  explicit BlockingCalls(int max_running) : max_running_(max_running) {}
  ~BlockingCalls() { Drain(); }
  // Waits until no handler runs. Call after the server's Shutdown (which cancels waiting calls) and
  // before what the handlers use goes away.
  void Drain();
  void set_client(Client* client) { client_.store(client); }

  using Handler = std::function<grpc::Status(Client& client, const CancellationToken& cancel)>;
  // A unary call: `handler` fills the response and returns the call's status.
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context, Handler handler);

  // A server-streaming call: `handler` calls `write` for each message (it blocks while the client
  // is slow to read; returns false once the call is cancelled) and returns the final status.
  template <typename Message>
  using StreamHandler =
      std::function<grpc::Status(Client& client, const CancellationToken& cancel,
                                 const std::function<bool(const Message&)>& write)>;
  template <typename Message>
  grpc::ServerWriteReactor<Message>* Stream(grpc::CallbackServerContext* context,
                                            StreamHandler<Message> handler);

  // Claims a slot for a handler thread and returns the client it will use; nullptr, with the status
  // to refuse the call with, when none can run now.
  Client* Acquire(grpc::Status* refusal);
  // A call carrying an auth token runs its handler with a client of its own that presents the
  // token, so that Lock and Election act with the caller's permissions (etcd's lock and election
  // servers call their member with the caller's context too). Returns `handler` unchanged
  // otherwise.
  template <typename AnyHandler>
  static AnyHandler ActAsCaller(const grpc::CallbackServerContext& context, Client& shared,
                                AnyHandler handler);
  // The client of its own for a call with a token; nullptr for one without.
  static std::shared_ptr<Client> CallerClient(const grpc::CallbackServerContext& context,
                                              Client& shared);
  void Release();

 private:
  const int max_running_;
  std::atomic<Client*> client_{nullptr};
  absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace leasehold::server

#include "server/api/blocking_calls_impl.h"
