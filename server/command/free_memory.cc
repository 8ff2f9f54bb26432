#include "server/command/free_memory.h"

#include <cstddef>

// jemalloc's control interface, when jemalloc is the allocator linked in; null otherwise.
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen)
    __attribute__((weak));

namespace leasehold::server {

void ReleaseFreeMemory() {
  if (mallctl == nullptr) return;
  // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty pages.
  mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
}

}  // namespace leasehold::server
