// A data dir that etcd wrote — the one `etcdctl snapshot restore` makes in etcd's disaster-recovery
// procedure, or a stopped etcd member's own — started on as it is: its backend (member/snap/db) is
// imported once into a Leasehold database in the same dir (storage/backup/etcd_backend.h says what
// is read), and etcd's member folder is renamed member.etcd-imported, kept for reference.
//
// Only the backend is read, not etcd's WAL: a dir from `etcdctl snapshot restore`, or from an etcd
// member that stopped cleanly, has every write in its backend; one whose etcd crashed may lack its
// last moments (the log line says so).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace leasehold::server {

// Imports `data_dir` when it is an etcd data dir without a Leasehold database; returns whether it
// did. A corrupt backend or one of an unknown version fails with the reason and leaves the dir as
// it was. A crash midway leaves it to be imported again on the next start.
[[nodiscard]] absl::StatusOr<bool> ImportEtcdDataDir(const std::string& data_dir,
                                                     const std::string& wal_dir);

}  // namespace leasehold::server
