// Hands memory the allocator holds free back to the operating system at once.
#pragma once

namespace leasehold::server {

// Restoring state builds its indexes by growing them, which leaves the outgrown arrays free but
// resident until jemalloc's decay returns them (seconds later, or never while the process stays
// idle). Called once the restore is done, so that a restarted member's resident memory is what it
// keeps. Does nothing under an allocator other than jemalloc (the sanitizer builds).
void ReleaseFreeMemory();

}  // namespace leasehold::server
