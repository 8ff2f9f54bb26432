// The Azure Blob REST adapter: answers the storage emulator's path-style URLs
// (/{account}/{container}/{blob}) for containers, block blobs and, above all, Lease Blob and Lease
// Container, on the replicated core. It keeps no state: every mutation is a BlobRequest proposed
// through the log and applied by the state machine (storage/blob/blob_ops.h); reads are answered
// from the local state after a read barrier, so they are linearizable on every member.
//
// Requests must be signed with SharedKey (blob_auth.h). Versions from 2012-02-12 on are accepted,
// newer dates included, and echoed; older ones are refused (see docs/blob-adapter.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "server/blob/blob_auth.h"
#include "server/http/http_server.h"
#include "server/member/member.h"

namespace leasehold::server {

struct BlobError;
struct BlobTarget;

class BlobService {
 public:
  struct Options {
    // Put Blob bodies up to this size; larger are refused with 413 RequestBodyTooLarge.
    uint64_t max_blob_bytes = 1024 * 1024;
    // The listing's ServiceEndpoint prefix, e.g. "http://127.0.0.1:10000/".
    std::string endpoint = "http://127.0.0.1:10000/";
  };
  BlobService(Member* member, SharedKeyVerifier verifier, Options options)
      : member_(member), verifier_(std::move(verifier)), options_(std::move(options)) {}

  // HttpServer's handler.
  void Handle(HttpRequest&& request, HttpServer::Respond respond);
  // The answer to a request whose body exceeds the limit.
  HttpResponse TooLarge(const HttpRequest& request) const;

 private:
  struct Call;  // one request in flight: what its answer needs
  void Dispatch(std::shared_ptr<Call> call, HttpRequest& request, const BlobTarget& target);
  void Propose(std::shared_ptr<Call> call, internalpb::BlobRequest blob);
  void Read(std::shared_ptr<Call> call, internalpb::BlobRequest blob);
  void ListContainers(std::shared_ptr<Call> call, const BlobTarget& target);
  void ListBlobs(std::shared_ptr<Call> call, const BlobTarget& target);

  Member* const member_;
  const SharedKeyVerifier verifier_;
  const Options options_;
};

}  // namespace leasehold::server
