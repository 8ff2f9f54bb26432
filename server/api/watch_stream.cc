#include "server/api/watch_stream.h"

#include <algorithm>

#include <google/protobuf/io/coded_stream.h>
#include <grpcpp/impl/codegen/proto_utils.h>

#include "absl/strings/str_cat.h"
#include "server/api/unmarshal_error.h"

namespace leasehold::server {

WatchStream::WatchStream(StreamCall* call, Member* member, WatchHub* hub, bool require_leader,
                         std::string auth_token, std::string cert_user, std::string_view connection)
    : AsyncBidiReactor(call),
      member_(member),
      hub_(hub),
      require_leader_(require_leader),
      auth_token_(std::move(auth_token)),
      cert_user_(std::move(cert_user)) {
  hub_->OpenStream(this, connection);
  StartRead(&request_bytes_);
}

size_t WatchStream::FragmentLimit() const {
  return static_cast<size_t>(member_->config().max_request_bytes + kGrpcOverheadBytes);
}

etcdserverpb::WatchResponse WatchStream::Response(int64_t watch_id, int64_t revision) const {
  etcdserverpb::WatchResponse response;
  response.set_watch_id(watch_id);
  response.mutable_header()->set_revision(revision);
  member_->FillHeader(response.mutable_header());
  return response;
}

void WatchStream::OnReadDone(bool ok) {
  if (!ok) return;  // half-closed or cancelled; events keep flowing until the client cancels
  if (!grpc::SerializationTraits<etcdserverpb::WatchRequest>::Deserialize(&request_bytes_,
                                                                          &request_)
           .ok()) {
    // etcd ends the stream on a request it cannot read, with gRPC's INTERNAL.
    End(grpc::Status(grpc::StatusCode::INTERNAL,
                     StreamUnmarshalError("etcdserverpb.WatchRequest")));
    return;
  }
  switch (request_.request_union_case()) {
    case etcdserverpb::WatchRequest::kCreateRequest:
      HandleCreate(request_.create_request());
      break;
    case etcdserverpb::WatchRequest::kCancelRequest:
      HandleCancel(request_.cancel_request().watch_id());
      break;
    case etcdserverpb::WatchRequest::kProgressRequest:
      // A progress notification: no events, watch id -1, the revision every watcher has reached.
      hub_->RequestProgress(this);
      break;
    case etcdserverpb::WatchRequest::REQUEST_UNION_NOT_SET:
      break;
  }
  StartRead(&request_bytes_);
}

absl::Status WatchStream::CheckPermitted(const etcdserverpb::WatchCreateRequest& create) const {
  absl::StatusOr<std::string> user =
      member_->AuthenticatedUser(auth_token_, [this] { return cert_user_; });
  if (!user.ok()) return user.status();
  const storage::AuthTable& auth = member_->state_machine().auth();
  if (!auth.enabled()) return absl::OkStatus();
  // An empty key watches from the smallest key, "\0", as etcd reads it.
  const std::string key = create.key().empty() ? std::string(1, '\0') : create.key();
  return auth.CheckRange(*user, key, create.range_end(), storage::Access::kRead);
}

void WatchStream::HandleCreate(const etcdserverpb::WatchCreateRequest& create) {
  int64_t id = create.watch_id();
  if (absl::Status st = CheckPermitted(create); !st.ok()) {
    // etcd refuses with watch id -1 (no id is given out) and the text of its gRPC error: an invalid
    // token (Unauthenticated) and a missing user or stale auth revision (InvalidArgument) say so;
    // anything else is "permission denied".
    std::string reason = "rpc error: code = PermissionDenied desc = etcdserver: permission denied";
    if (absl::IsUnauthenticated(st)) {
      reason = absl::StrCat("rpc error: code = Unauthenticated desc = ", st.message());
    } else if (absl::IsInvalidArgument(st)) {
      reason = absl::StrCat("rpc error: code = InvalidArgument desc = ", st.message());
    }
    return RefuseCreate(-1, std::move(reason));
  }
  // An empty key is the smallest key, "\0", as etcd reads it.
  const std::string key = create.key().empty() ? std::string(1, '\0') : create.key();
  // A range that selects nothing (ending at or before its key; "\0" means "every key from key on")
  // and a watch id in use are refused before an id is given out, with watch id -1, as etcd does.
  const std::string& range_end = create.range_end();
  if (!range_end.empty() && range_end != std::string_view("\0", 1) && key >= range_end) {
    return RefuseCreate(-1, "mvcc: watcher range is empty");
  }
  if (id != 0 && ids_.contains(id))
    return RefuseCreate(-1, "mvcc: duplicate watch ID provided on the WatchStream");
  if (id == 0) {
    while (ids_.contains(next_id_)) ++next_id_;
    id = next_id_++;
  }
  WatchSpec spec;
  spec.watch_id = id;
  spec.key = key;
  spec.range_end = range_end;
  spec.start_revision = create.start_revision();
  spec.prev_kv = create.prev_kv();
  spec.progress_notify = create.progress_notify();
  spec.fragment = create.fragment();
  for (int f : create.filters()) {
    if (f == etcdserverpb::WatchCreateRequest::NOPUT) spec.no_put = true;
    if (f == etcdserverpb::WatchCreateRequest::NODELETE) spec.no_delete = true;
  }
  // The created response goes first and names the revision the watcher is current at; the watcher
  // starts right after it, so whatever is published before Add is replayed, not lost.
  const int64_t now = hub_->published_revision();
  if (spec.start_revision <= 0) {
    spec.before_first = spec.start_revision < 0;
    spec.start_revision = now + 1;
  }
  etcdserverpb::WatchResponse created = Response(id, now);
  created.set_created(true);
  Enqueue(created);
  int64_t current = 0, compact = 0;
  absl::Status st = hub_->Add(this, spec, &current, &compact);
  if (!st.ok()) {
    Enqueue(CompactedResponse(id, compact));
    return;
  }
  ids_.insert(id);
}

void WatchStream::RefuseCreate(int64_t watch_id, std::string reason) {
  etcdserverpb::WatchResponse response = Response(watch_id, hub_->published_revision());
  response.set_created(true);
  response.set_canceled(true);
  response.set_cancel_reason(std::move(reason));
  Enqueue(response);
}

void WatchStream::HandleCancel(int64_t watch_id) {
  if (!hub_->Remove(this, watch_id)) return;
  ids_.erase(watch_id);
  etcdserverpb::WatchResponse response = Response(watch_id, hub_->published_revision());
  response.set_canceled(true);
  Enqueue(response);
}

bool WatchStream::Deliver(const WatchSpec& spec, std::vector<mvccpb::Event> events,
                          int64_t revision) {
  absl::MutexLock lock(&mu_);
  return DeliverLocked(spec, std::move(events), revision);
}

bool WatchStream::DeliverShared(const WatchSpec& spec, const SharedEvents& events,
                                int64_t revision) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return true;  // as in DeliverLocked
  const grpc::Slice& encoded = events.Encoded(spec.prev_kv);
  const size_t limit = FragmentLimit();
  if (spec.fragment && events.events().size() >= 2 && encoded.size() + 64 >= limit) {
    // Large enough to need fragments (64 bytes cover the header and watch id): the general way.
    std::vector<mvccpb::Event> copy = events.events();
    if (!spec.prev_kv) {
      for (auto& e : copy) e.clear_prev_kv();
    }
    return DeliverLocked(spec, std::move(copy), revision);
  }
  return EnqueueEventsLocked(spec, revision, encoded, events.events().front().kv().mod_revision());
}

bool WatchStream::EnqueueEventsLocked(const WatchSpec& spec, int64_t revision,
                                      const grpc::Slice& events, int64_t first_revision) {
  // WatchResponse's fields in any order parse as one message, repeated ones appended: the watch
  // id, the header (shared by this publish's responses on this stream) and the events (shared by
  // every watcher that takes them all), as many events fields as joined.
  const size_t header_part = spec.watch_id != 0 ? 1 : 0;
  if (FullLocked()) {
    refused_ = true;
    return false;
  }
  if (auto open = open_.find(spec.watch_id); open != open_.end()) {
    Pending& pending = queue_[open->second - written_];
    revision = std::max(revision, pending.revision);
    if (pending.size + events.size() <= kMaxMergedBytes &&
        revision - pending.first_revision < WatchHub::kMaxRevisionsPerResponse) {
      pending.revision = revision;
      const grpc::Slice& header = HeaderFieldLocked(revision);
      const size_t grown = header.size() - pending.parts[header_part].size() + events.size();
      pending.size += grown;
      ++pending.pieces;
      ++queued_pieces_;
      pending.parts[header_part] = header;
      pending.parts.push_back(events);
      return true;
    }
    open_.erase(open);  // full: the next response opens
  }
  Pending pending;
  pending.watch_id = spec.watch_id;
  pending.first_revision = first_revision;
  pending.revision = revision;
  if (spec.watch_id != 0) {
    char id_field[1 + 10];  // a tag byte and a varint of at most 10 bytes
    id_field[0] =
        static_cast<char>((etcdserverpb::WatchResponse::kWatchIdFieldNumber << 3) | 0);  // varint
    uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(
        static_cast<uint64_t>(spec.watch_id), reinterpret_cast<uint8_t*>(id_field + 1));
    pending.parts.emplace_back(id_field,
                               static_cast<size_t>(reinterpret_cast<char*>(end) - id_field));
  }
  pending.parts.push_back(HeaderFieldLocked(revision));
  pending.parts.push_back(events);
  for (const auto& part : pending.parts) pending.size += part.size();
  ++queued_pieces_;
  queue_.push_back(std::move(pending));
  open_[spec.watch_id] = written_ + queue_.size() - 1;
  if (!writing_) WriteNextLocked();
  return true;
}

const grpc::Slice& WatchStream::HeaderFieldLocked(int64_t revision) {
  etcdserverpb::ResponseHeader header;
  header.set_revision(revision);
  member_->FillHeader(&header);
  if (header_field_.size() == 0 || header.revision() != header_.revision() ||
      header.raft_term() != header_.raft_term() || header.member_id() != header_.member_id() ||
      header.cluster_id() != header_.cluster_id()) {
    etcdserverpb::WatchResponse holder;
    *holder.mutable_header() = header;
    header_field_ = grpc::Slice(holder.SerializeAsString());
    header_ = std::move(header);
  }
  return header_field_;
}

bool WatchStream::DeliverLocked(const WatchSpec& spec, std::vector<mvccpb::Event> events,
                                int64_t revision) {
  if (cancelled_) return true;  // nobody to deliver to; the hub forgets us in OnDone
  if (events.empty()) return true;
  const size_t limit = FragmentLimit();
  {
    // A response holding just the events serialises to exactly the events fields.
    etcdserverpb::WatchResponse holder;
    for (auto& e : events) *holder.add_events() = std::move(e);
    const size_t size = holder.ByteSizeLong();
    // 64 bytes cover the header and the watch id.
    if (!spec.fragment || holder.events_size() < 2 || size + 64 < limit) {
      const int64_t first = holder.events(0).kv().mod_revision();
      return EnqueueEventsLocked(spec, revision, grpc::Slice(holder.SerializeAsString()), first);
    }
    events.assign(std::make_move_iterator(holder.mutable_events()->begin()),
                  std::make_move_iterator(holder.mutable_events()->end()));
  }
  if (FullLocked()) {
    refused_ = true;
    return false;
  }
  etcdserverpb::WatchResponse response = Response(spec.watch_id, revision);
  for (auto& e : events) *response.add_events() = std::move(e);
  if (response.events_size() < 2 || response.ByteSizeLong() < limit) {
    EnqueueLocked(response);
    return true;
  }
  // etcd's fragmentation: each piece takes events while it stays under `limit` (at least one
  // event), all but the last marked as fragments; the client joins them into one response.
  etcdserverpb::WatchResponse piece = Response(spec.watch_id, revision);
  piece.set_fragment(true);
  const size_t empty_size = piece.ByteSizeLong();
  size_t size = empty_size;
  for (auto& e : *response.mutable_events()) {
    const size_t event_size = e.ByteSizeLong();
    // Field tag, length and the event itself, as the event adds them to the response.
    const size_t added =
        1 + google::protobuf::io::CodedOutputStream::VarintSize64(event_size) + event_size;
    if (piece.events_size() > 0 && size + added >= limit) {
      EnqueueLocked(piece);
      piece = Response(spec.watch_id, revision);
      piece.set_fragment(true);
      size = empty_size;
    }
    *piece.add_events() = std::move(e);
    size += added;
  }
  piece.set_fragment(false);
  EnqueueLocked(piece);
  return true;
}

void WatchStream::Progress(int64_t watch_id, int64_t revision) {
  absl::MutexLock lock(&mu_);
  if (FullLocked()) return;  // a later notification will do
  EnqueueLocked(Response(watch_id, revision));
}

void WatchStream::RequestedProgress(int64_t revision) { Enqueue(Response(-1, revision)); }

void WatchStream::Compacted(int64_t watch_id, int64_t compact_revision) {
  absl::MutexLock lock(&mu_);
  EnqueueLocked(CompactedResponse(watch_id, compact_revision));
}

etcdserverpb::WatchResponse WatchStream::CompactedResponse(int64_t watch_id,
                                                           int64_t compact_revision) const {
  etcdserverpb::WatchResponse response = Response(watch_id, 0);
  // etcd's cancel for a compacted watcher names no revision in its header.
  response.mutable_header()->set_revision(0);
  response.set_canceled(true);
  response.set_compact_revision(compact_revision);
  return response;
}

void WatchStream::Enqueue(const etcdserverpb::WatchResponse& response) {
  absl::MutexLock lock(&mu_);
  EnqueueLocked(response);
}

void WatchStream::EnqueueLocked(const etcdserverpb::WatchResponse& response) {
  if (cancelled_) return;
  grpc::ByteBuffer bytes;
  bool own_buffer = false;
  if (!grpc::SerializationTraits<etcdserverpb::WatchResponse>::Serialize(response, &bytes,
                                                                         &own_buffer)
           .ok())
    return;
  EnqueueBytesLocked(std::move(bytes));
}

void WatchStream::EnqueueBytesLocked(grpc::ByteBuffer bytes) {
  if (cancelled_) return;
  // Nothing queued so far may take events any more: they would pass this response.
  open_.clear();
  Pending& pending = queue_.emplace_back();
  pending.bytes = std::move(bytes);
  ++queued_pieces_;
  if (!writing_) WriteNextLocked();
}

void WatchStream::WriteNextLocked() {
  writing_ = true;
  Pending& next = queue_.front();
  if (!next.parts.empty()) {  // an open response closes as its write starts
    next.bytes = grpc::ByteBuffer(next.parts.data(), next.parts.size());
    next.parts.clear();
    if (auto open = open_.find(next.watch_id); open != open_.end() && open->second == written_)
      open_.erase(open);
  }
  // With more responses queued behind this one, let gRPC hold it and send them together (one frame
  // write for many responses when a put fans out to many watchers of this stream); the last queued
  // response goes without the hint, which flushes the lot.
  StartWrite(&next.bytes,
             queue_.size() > 1 ? grpc::WriteOptions().set_buffer_hint() : grpc::WriteOptions());
}

void WatchStream::OnWriteDone(bool ok) {
  bool catch_up = false;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      cancelled_ = true;
      DropQueuedLocked(/*keep_front=*/false);
      MaybeFinishLocked();
      return;
    }
    queued_pieces_ -= queue_.front().pieces;
    queue_.pop_front();
    ++written_;
    if (cancelled_) {
      DropQueuedLocked(/*keep_front=*/false);
    } else {
      if (!queue_.empty()) WriteNextLocked();
      // Refused watchers are caught up while half the queue is still to go, so the stream keeps
      // writing while the hub reads their history.
      if (refused_ && queued_pieces_ <= kMaxQueued / 2) {
        refused_ = false;
        catch_up = true;
      }
    }
    MaybeFinishLocked();
  }
  if (catch_up) hub_->CatchUp(this);  // outside our lock: the hub locks itself, then us
}

void WatchStream::NoLeader() {
  if (!require_leader_) return;
  End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "etcdserver: no leader"));
}

void WatchStream::End(grpc::Status status) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return;
  cancelled_ = true;
  final_status_ = std::move(status);
  DropQueuedLocked(/*keep_front=*/writing_);
  MaybeFinishLocked();
}

void WatchStream::OnCancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  DropQueuedLocked(/*keep_front=*/writing_);
  MaybeFinishLocked();
}

void WatchStream::DropQueuedLocked(bool keep_front) {
  open_.clear();
  queue_.erase(keep_front ? queue_.begin() + 1 : queue_.begin(), queue_.end());
  queued_pieces_ = queue_.empty() ? 0 : queue_.front().pieces;
}

bool WatchStream::FullLocked() const { return queued_pieces_ >= kMaxQueued; }

void WatchStream::MaybeFinishLocked() {
  if (finished_ || writing_ || !cancelled_) return;
  finished_ = true;
  Finish(final_status_);
}

void WatchStream::OnDone() {
  hub_->RemoveAll(this);
  delete this;
}

}  // namespace leasehold::server
