// `leasehold snapshot restore|status`: the offline half of backups (storage/backup/backup.h), as
// `etcdctl snapshot restore|status` are for etcd's. Saving is online: `etcdctl snapshot save`.
#pragma once

namespace leasehold::server {

// Runs `leasehold snapshot ...` with argv[0] = "snapshot"; returns the process exit code.
//   snapshot status FILE                  checks FILE and prints its digest, revision, keys, size
//   snapshot restore FILE --data-dir DIR  seeds the new data dir DIR from FILE
int RunSnapshotCommand(int argc, char** argv);

}  // namespace leasehold::server
