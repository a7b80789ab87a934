/* init_join: a program linked with liblarder.so (no preload) whose MPI_Init starts Larder through
 * the hooks, and which then calls larder_init itself. Prints one line per step, "step result",
 * for the driver to compare; reads a managed file through the C API and prints its hash.
 *
 * Usage: init_join <managed file> */
#define _GNU_SOURCE
#include <fcntl.h>
#include <larder/larder.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fnv.h"

static int rank;

static void step(const char* what, long result) {
  if (rank == 0) printf("%s %ld\n", what, result);
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 3;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  setvbuf(stdout, NULL, _IOLBF, 0);
  step("running-after-MPI_Init", larder_initialized());
  step("init-world", larder_init(MPI_COMM_WORLD));
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  step("init-congruent", larder_init(dup));
  step("init-self", larder_init(MPI_COMM_SELF));
  step("init-null", larder_init(MPI_COMM_NULL));

  int fd = larder_open(argv[1], O_RDONLY);
  static char buf[1 << 20];
  ssize_t n = fd >= 0 ? larder_pread(fd, buf, sizeof buf, 0) : -1;
  if (rank == 0)
    printf("read %zd %016llx\n", n, (unsigned long long)fnv(buf, n > 0 ? (size_t)n : 0));
  if (fd >= 0) larder_close(fd);
  larder_stats_t st;
  step("stats", larder_stats_get(&st));
  step("served-by-cache", st.pfs_read_ops + st.hits_self + st.hits_node > 0);

  step("finalize-1", larder_finalize());
  step("finalize-2", larder_finalize());
  step("still-running", larder_initialized());
  step("finalize-unmatched", larder_finalize());
  step("still-running-after-unmatched", larder_initialized());
  MPI_Comm_free(&dup);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  step("running-after-MPI_Finalize", larder_initialized());
  return 0;
}
