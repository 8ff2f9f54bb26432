#include "server/local_proposer.h"

#include "server/log.h"
#include "storage/etcd_errors.h"

namespace leasehold::server {

absl::Status LocalProposer::Start() {
  uint64_t last = state_machine_->applied_index();
  std::vector<mvccpb::Event> events;
  // Replay entries that were synced but not applied before the last stop.
  auto it = engine_->NewIterator();
  for (it->Seek(std::string(1, storage::keys::kLogPrefix)); it->Valid(); it->Next()) {
    if (it->key().size() != 9 || it->key()[0] != storage::keys::kLogPrefix) break;
    uint64_t index = storage::ReadBigEndian64(std::string_view(it->key().data() + 1, 8));
    if (index <= state_machine_->applied_index()) continue;
    internalpb::InternalRequest entry;
    if (!entry.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return absl::DataLossError("malformed log entry " + std::to_string(index));
    }
    storage::ApplyResult result = state_machine_->Apply(index, entry);
    for (auto& e : result.events) events.push_back(std::move(e));
    last = index;
  }
  if (!it->status().ok()) return absl::DataLossError(it->status().ToString());
  state_machine_->FlushApplied();
  if (observer_) observer_(events, state_machine_->revision());

  auto term = engine_->GetMetaU64("term");
  if (!term.ok()) return term.status();
  // A fresh member starts at term 2 as a new etcd member does after its first election; every
  // restart is a new term of leadership.
  term_ = std::max<uint64_t>(*term + 1, 2);
  rocksdb::WriteBatch batch;
  storage::Engine::PutMetaU64(&batch, "term", term_);
  if (absl::Status st = engine_->Write(&batch, true); !st.ok()) return st;
  {
    absl::MutexLock lock(&mu_);
    last_index_ = last;
  }
  responder_ = std::thread([this] { Respond(); });
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void LocalProposer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  {
    absl::MutexLock lock(&respond_mu_);
    respond_stopping_ = true;
  }
  if (responder_.joinable()) responder_.join();
  std::vector<Pending> left;
  {
    absl::MutexLock lock(&mu_);
    left.swap(queue_);
  }
  for (auto& p : left) p.done(storage::ApplyResult::Error(errors::Stopped()));
}

void LocalProposer::Propose(internalpb::InternalRequest entry, Done done) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back({std::move(entry), std::move(done)});
      return;
    }
  }
  done(storage::ApplyResult::Error(errors::Stopped()));
}

uint64_t LocalProposer::committed_index() const {
  absl::MutexLock lock(&mu_);
  return last_index_;
}

void LocalProposer::Run() {
  std::vector<Pending> batch;
  std::string buffer;
  while (true) {
    uint64_t first_index;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](LocalProposer* self) ABSL_NO_THREAD_SAFETY_ANALYSIS { return self->stopping_ || !self->queue_.empty(); },
          this));
      if (stopping_) return;
      batch.swap(queue_);
      first_index = last_index_ + 1;
    }
    // One synced write for the whole batch: this is the group commit.
    rocksdb::WriteBatch log;
    uint64_t index = first_index;
    for (auto& p : batch) {
      buffer.clear();
      p.entry.SerializeToString(&buffer);
      log.Put(storage::keys::LogEntry(index++), buffer);
    }
    if (absl::Status st = engine_->Write(&log, /*sync=*/true); !st.ok()) {
      LogError("log write failed", {{"error", st.ToString()}});
      for (auto& p : batch) p.done(storage::ApplyResult::Error(errors::RequestTimeout()));
      batch.clear();
      continue;
    }
    {
      absl::MutexLock lock(&mu_);
      last_index_ = index - 1;
    }
    index = first_index;
    AppliedGroup group;
    group.completions.reserve(batch.size());
    for (auto& p : batch) {
      storage::ApplyResult result = state_machine_->Apply(index++, p.entry);
      if (observer_) {
        for (auto& e : result.events) group.events.push_back(std::move(e));
      }
      group.completions.push_back({std::move(p.done), std::move(result)});
    }
    state_machine_->FlushApplied();
    group.revision = state_machine_->revision();
    batch.clear();
    absl::MutexLock lock(&respond_mu_);
    to_respond_.push_back(std::move(group));
  }
}

void LocalProposer::Respond() {
  std::vector<AppliedGroup> ready;
  while (true) {
    {
      absl::MutexLock lock(&respond_mu_);
      respond_mu_.Await(absl::Condition(
          +[](LocalProposer* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return self->respond_stopping_ || !self->to_respond_.empty();
          },
          this));
      if (to_respond_.empty()) return;  // stopping, and everything answered
      ready.swap(to_respond_);
    }
    for (auto& group : ready) {
      // Watchers first: a lock waiter hears of its predecessor's deletion as early as possible.
      if (observer_) observer_(group.events, group.revision);
      for (auto& c : group.completions) c.done(std::move(c.result));
    }
    ready.clear();
  }
}

}  // namespace leasehold::server
