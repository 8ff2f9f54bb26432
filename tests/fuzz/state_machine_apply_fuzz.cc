// libFuzzer target: the state machine's Apply of arbitrary internal entries. The input is a
// sequence of length-prefixed InternalRequest messages (1-byte length); each that parses is applied
// at the next log index of a fresh store, flushed every few entries, and the state is then dumped
// and reloaded. Apply must never crash on any entry a (buggy or hostile) proposer could put in the
// log: a bad entry is an error result, and the store stays usable.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "leasehold/internal.pb.h"
#include "storage/apply/state_machine.h"
#include "storage/backend/engine.h"

namespace {

std::string FreshDir() {
  static int counter = 0;
  const char* base = std::getenv("TMPDIR");
  return std::string(base ? base : "/tmp") + "/apply-fuzz-" + std::to_string(getpid()) + "-" +
         std::to_string(counter++);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = FreshDir();
  {
    auto engine = leasehold::storage::Engine::Open(dir);
    if (!engine.ok()) std::abort();
    auto sm = leasehold::storage::StateMachine::Open(engine->get(), {});
    if (!sm.ok()) std::abort();
    uint64_t index = 0;
    size_t at = 0;
    while (at < size) {
      const size_t length = std::min<size_t>(data[at], size - at - 1);
      ++at;
      leasehold::internalpb::InternalRequest entry;
      if (entry.ParseFromArray(data + at, static_cast<int>(length))) {
        (void)(*sm)->Apply(++index, entry);
        if (index % 4 == 0) (*sm)->FlushApplied();
      }
      at += length;
    }
    (*sm)->FlushApplied();
    std::string dump;
    if (!(*sm)->Dump(&dump).ok()) std::abort();
    if (!(*sm)->ReloadFromEngine().ok()) std::abort();
  }
  std::filesystem::remove_all(dir);
  return 0;
}
