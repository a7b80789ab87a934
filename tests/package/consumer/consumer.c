/* Uses the installed C API: a cache private to this process reads a file; the bytes must equal
 * a direct read. Usage: consumer_c FILE. Prints "ok <bytes> <pfs bytes>" on success. */
#include <fcntl.h>
#include <larder/larder.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  static char direct[1 << 20], cached[1 << 20];
  int fd = open(argv[1], O_RDONLY);
  const ssize_t n = fd < 0 ? -1 : read(fd, direct, sizeof direct);
  if (n <= 0 || close(fd) != 0) return 1;
  if (larder_init(MPI_COMM_NULL) != LARDER_OK) {
    fprintf(stderr, "larder_init: %s\n", larder_last_error());
    return 1;
  }
  if (larder_active() != LARDER_ACTIVE_RANK) return 1;
  int lfd = larder_open(argv[1], O_RDONLY);
  const ssize_t m = lfd < 0 ? -1 : larder_pread(lfd, cached, sizeof cached, 0);
  if (m != n || memcmp(direct, cached, (size_t)n) != 0 || larder_close(lfd) != 0) return 1;
  larder_stats_t st;
  if (larder_stats_get(&st) != LARDER_OK) return 1;
  printf("ok %zd %llu\n", m, (unsigned long long)st.pfs_bytes_read);
  return larder_finalize() == LARDER_OK ? 0 : 1;
}
