// LD_PRELOAD for members under fault injection: after each successful fsync/fdatasync of a
// write-ahead log (*.log), appends "path offset" to $LEASEHOLD_SYNCED_LOG, the offset being where
// the log's next write goes (RocksDB appends with write(), and preallocates the file beyond that
// point, so the file's size says nothing). The nemesis then knows, for a killed member, which tail
// of each log was never synced and may drop it, as a machine losing its page cache would. The
// offset is read after the sync returns, so it never claims less than was synced.
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

void record_synced(int fd) {
  const char* out_path = getenv("LEASEHOLD_SYNCED_LOG");
  struct stat st;
  if (out_path == nullptr || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 4) return;
  path[n] = '\0';
  if (strcmp(path + n - 4, ".log") != 0) return;
  const int out = open(out_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (out < 0) return;
  const off_t written = lseek(fd, 0, SEEK_CUR);
  if (written < 0) {
    close(out);
    return;
  }
  dprintf(out, "%s %lld\n", path, static_cast<long long>(written));
  close(out);
}

}  // namespace

extern "C" int fsync(int fd) {
  static int (*real)(int) = nullptr;
  if (real == nullptr) real = reinterpret_cast<int (*)(int)>(dlsym(RTLD_NEXT, "fsync"));
  const int rc = real(fd);
  if (rc == 0) record_synced(fd);
  return rc;
}

extern "C" int fdatasync(int fd) {
  static int (*real)(int) = nullptr;
  if (real == nullptr) real = reinterpret_cast<int (*)(int)>(dlsym(RTLD_NEXT, "fdatasync"));
  const int rc = real(fd);
  if (rc == 0) record_synced(fd);
  return rc;
}
