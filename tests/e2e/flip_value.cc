// flip_value DATA_DIR MARKER: what a failing disk might do to a stopped member. In every stored
// key-value version (the MVCC records under keys::kRevisionPrefix) whose bytes hold MARKER, the
// marker's letters change case, so the record still parses but holds another value. Prints how
// many records it changed; exits 1 when none held the marker. For corrupt_check_e2e.sh only.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>

#include "rocksdb/write_batch.h"
#include "storage/backend/engine.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DATA_DIR MARKER\n", argv[0]);
    return 2;
  }
  auto engine = leasehold::storage::Engine::Open(argv[1]);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().ToString().c_str());
    return 2;
  }
  const std::string marker = argv[2];
  std::string flipped = marker;
  std::transform(flipped.begin(), flipped.end(), flipped.begin(), [](unsigned char c) {
    return std::islower(c) ? std::toupper(c) : std::tolower(c);
  });
  rocksdb::WriteBatch batch;
  int changed = 0;
  auto it = (*engine)->NewIterator(std::string(1, leasehold::storage::keys::kRevisionPrefix + 1));
  for (it->Seek(std::string(1, leasehold::storage::keys::kRevisionPrefix)); it->Valid();
       it->Next()) {
    std::string value = it->value().ToString();
    const size_t at = value.find(marker);
    if (at == std::string::npos) continue;
    value.replace(at, marker.size(), flipped);
    batch.Put(it->key(), value);
    ++changed;
  }
  if (changed == 0) return 1;
  if (auto st = (*engine)->Write(&batch, true); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 2;
  }
  std::printf("%d\n", changed);
  return 0;
}
