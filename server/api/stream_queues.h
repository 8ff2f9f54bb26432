// Long-lived bidirectional streams served through gRPC's async API, on completion queues of our own
// with a thread each, instead of the callback API.
//
// Why: Debian's libgrpc is built without NDEBUG, and such a build checks every completion against
// the list of all operations outstanding on its queue, one by one. On the callback API every call
// of the process shares one queue, so each open Watch stream's pending read lengthened the scan of
// every unary call's completion: with 10,000 idle watch streams open, that scan was about 30% of
// the server's time serving puts. Streams served here keep their pending operations on these
// queues, spread over several, and unary calls stay on the callback API.
//
// The streams' queues do not poll: gRPC's own threads (the callback API's) read the sockets and
// hand completions over. A thread waiting on a polling queue takes turns at polling with gRPC's
// threads, and every unary call it happened to read then had to be handed back to them: one such
// thread cost unary calls a quarter of their throughput. New calls must be announced on a polling
// queue registered with the server; that one is looked at every 1 to 16 milliseconds instead of
// waited on (soon after a call came, less often while none come), so a new stream's first response
// may come that much later. Looking every millisecond still cost keep-alive streams 17% of their
// throughput.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/async_stream.h>

namespace leasehold::server {

class StreamCall;

// A stream's handler: grpc::ServerBidiReactor's contract, for streams served by StreamQueues. At
// most one read and one write outstanding; Finish once, with no write outstanding; OnCancel when
// the call ends without Finish (client gone, server shutting down); OnDone last, once every
// operation has completed — nothing is called after it, and the handler may delete itself there.
// Start* may be called from any thread; the On* callbacks of one stream run one at a time on one
// of the queues' threads.
class AsyncBidiReactor {
 public:
  // Binds the handler to its call before a derived constructor can start the first operation.
  explicit AsyncBidiReactor(StreamCall* call);
  virtual ~AsyncBidiReactor() = default;
  AsyncBidiReactor(const AsyncBidiReactor&) = delete;
  AsyncBidiReactor& operator=(const AsyncBidiReactor&) = delete;

  virtual void OnReadDone(bool ok) = 0;
  virtual void OnWriteDone(bool ok) = 0;
  virtual void OnCancel() {}
  virtual void OnDone() = 0;

 protected:
  // `buffer` must live until OnReadDone; a written buffer is copied (by reference to its slices).
  void StartRead(grpc::ByteBuffer* buffer);
  void StartWrite(const grpc::ByteBuffer* buffer,
                  grpc::WriteOptions options = grpc::WriteOptions());
  void Finish(grpc::Status status);

 private:
  StreamCall* const call_;
};

class StreamQueues {
 public:
  using Stream = grpc::ServerAsyncReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;
  // Asks gRPC for the service's next call (a generated RequestX of a raw async method): `tag`
  // completes on `announce_queue` when one arrives, and the call's operations on `call_queue`.
  using RequestCall = std::function<void(grpc::ServerContext* context, Stream* stream,
                                         grpc::CompletionQueue* call_queue,
                                         grpc::ServerCompletionQueue* announce_queue, void* tag)>;
  // Makes the handler of an accepted call; `context` holds the client's metadata.
  using MakeReactor =
      std::function<AsyncBidiReactor*(StreamCall* call, grpc::ServerContext& context)>;

  // Adds the queue announcing new calls to `builder`, and makes `queues` queues for the streams:
  // construct before the builder's BuildAndStart.
  StreamQueues(grpc::ServerBuilder& builder, int queues);
  ~StreamQueues();  // Stop()s

  // After BuildAndStart: accepts calls, spread over the streams' queues, each served by a thread.
  void Start(RequestCall request, MakeReactor make);
  // After grpc::Server::Shutdown, which ends every call, and before the server is destroyed (a
  // request it refused still refers to it): waits until every stream is done, then shuts the queues
  // down and joins their threads. Handlers must not start operations after their OnDone.
  void Stop();

 private:
  friend class StreamCall;
  static void Serve(grpc::CompletionQueue* queue);
  void DrainAnnouncements();
  // Requests the next call, its operations to go to the next of the streams' queues in turn.
  void RequestNext();

  std::unique_ptr<grpc::ServerCompletionQueue> announce_;
  std::vector<std::unique_ptr<grpc::CompletionQueue>> queues_;
  size_t next_queue_ = 0;  // touched by the announcing thread only
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_announcing_{false};
  RequestCall request_;
  MakeReactor make_;
  std::atomic<int64_t> calls_{0};  // StreamCall objects alive, including those awaiting a call
  bool stopped_ = false;
};

}  // namespace leasehold::server
