/* shared_mmap: every rank maps the same managed files (run by run_shared_mmap.py). Phases, with a
 * barrier between them so every rank holds its mapping while the others measure:
 *   whole   MAP_SHARED, PROT_READ of file 1: FNV-1a of its bytes; this process's anonymous and
 *           proportional memory (smaps_rollup, kB) while all ranks hold it, and the proportional
 *           memory of the mappings of file 1 itself or of any file under a "larder-" directory
 *           (Larder's arenas, segments and node files): summed over the ranks of a node, the
 *           node's memory for the file
 *   private MAP_PRIVATE, PROT_READ|PROT_WRITE of file 1: the first 100 bytes written; this view
 *           changed, a second mapping of the file does not see it
 *   long    MAP_SHARED, PROT_READ of file 2 with a length of 1 TiB (LMDB's map_size): maps, and
 *           its first bytes are the file's
 *   worker  a forked child (a DataLoader worker: served through its rank's agent) opens and maps
 *           file 1: FNV-1a of its bytes, and its anonymous memory
 * Output: lines to <out>.<rank>. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fnv.h"

static long rollup_kb(const char* field) {
  FILE* f = fopen("/proc/self/smaps_rollup", "r");
  if (f == NULL) return -1;
  char line[256];
  long kb = -1;
  const size_t n = strlen(field);
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, field, n) == 0 && line[n] == ':') sscanf(line + n + 1, "%ld", &kb);
  }
  fclose(f);
  return kb;
}

/* Pss (kB) of the mappings of `file`, or of files whose path has a "/larder-" component. */
static long file_pss_kb(const char* file) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (f == NULL) return -1;
  char line[4608];
  long kb = 0;
  int counting = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    char* slash = strchr(line, '/');
    unsigned long start = 0, end = 0;
    if (sscanf(line, "%lx-%lx ", &start, &end) == 2) { /* a mapping's header line */
      counting = 0;
      if (slash != NULL) {
        slash[strcspn(slash, "\n")] = '\0';
        counting = strcmp(slash, file) == 0 || strstr(slash, "/larder-") != NULL;
      }
    } else if (counting && strncmp(line, "Pss:", 4) == 0) {
      long v = 0;
      if (sscanf(line + 4, "%ld", &v) == 1) kb += v;
    }
  }
  fclose(f);
  return kb;
}

static off_t size_of(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? st.st_size : -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc != 4) {
    fprintf(stderr, "usage: shared_mmap OUT BIG SMALL\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char name[4096];
  snprintf(name, sizeof name, "%s.%d", argv[1], rank);
  FILE* out = fopen(name, "w");
  if (out == NULL) MPI_Abort(MPI_COMM_WORLD, 3);

  const int big = open(argv[2], O_RDONLY);
  const off_t size = size_of(big);
  unsigned char* whole = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, big, 0);
  if (whole == MAP_FAILED) {
    fprintf(out, "whole rc=-1 errno=%d\n", errno);
  } else {
    fprintf(out, "whole hash=%016llx\n", (unsigned long long)fnv(whole, (size_t)size));
  }
  MPI_Barrier(MPI_COMM_WORLD); /* every rank holds its mapping, every page touched */
  fprintf(out, "memory anonymous_kb=%ld pss_kb=%ld file_kb=%ld\n", rollup_kb("Anonymous"),
          rollup_kb("Pss"), file_pss_kb(argv[2]));
  MPI_Barrier(MPI_COMM_WORLD);

  unsigned char* priv = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE, big, 0);
  unsigned char* again = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, big, 0);
  if (priv == MAP_FAILED || again == MAP_FAILED || whole == MAP_FAILED) {
    fprintf(out, "private rc=-1 errno=%d\n", errno);
  } else {
    memset(priv, 0x5a, 100);
    const int mine =
        priv[0] == 0x5a && priv[99] == 0x5a && memcmp(priv + 100, whole + 100, 4096) == 0;
    const int others = memcmp(again, whole, 100) == 0;
    fprintf(out, "private written=%d unseen_elsewhere=%d\n", mine, others);
  }

  const int small = open(argv[3], O_RDONLY);
  const off_t small_size = size_of(small);
  unsigned char* lng = mmap(NULL, (size_t)1 << 40, PROT_READ, MAP_SHARED, small, 0);
  if (lng == MAP_FAILED) {
    fprintf(out, "long rc=-1 errno=%d\n", errno);
  } else {
    fprintf(out, "long hash=%016llx\n", (unsigned long long)fnv(lng, (size_t)small_size));
  }
  fflush(out);
  const pid_t child = fork();
  if (child == 0) {
    const int fd = open(argv[2], O_RDONLY);
    unsigned char* w = fd < 0 ? MAP_FAILED : mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (w == MAP_FAILED) {
      fprintf(out, "worker rc=-1 errno=%d\n", errno);
    } else {
      fprintf(out, "worker hash=%016llx anonymous_kb=%ld\n",
              (unsigned long long)fnv(w, (size_t)size), rollup_kb("Anonymous"));
    }
    fclose(out);
    _exit(0);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) {
    fprintf(out, "worker rc=-1 errno=%d\n", errno);
  }
  fclose(out);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
