/* mmap_calls: maps files under the managed prefix after MPI_Init, the way programs do, and
 * prints a hash of what it sees, for the driver to compare with a direct read of the files.
 *
 * Usage: mmap_calls <out prefix> <file>...
 * Writes to <out prefix>.<rank> (not stdout: the launcher interleaves the ranks' output). For each
 * file: a read-only MAP_SHARED mapping of the whole file, a MAP_PRIVATE mapping at a
 * page-aligned offset in the middle, and a MAP_PRIVATE mapping that is then written to (the
 * file must not change). One line per mapping: "<name> <what> rc=<0|-1> errno=<name> hash=<h>".
 * Also reports whether UCX's memory manager, when it is in the process, still sees mappings
 * ("ucm mmap events N", -1 when libucm is not loaded). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fnv.h"

static FILE* out;

static void report(const char* path, const char* what, void* m, size_t n) {
  const char* name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  const int err = errno;
  fprintf(out, "%s %s rc=%d errno=%s hash=%016llx\n", name, what, m == MAP_FAILED ? -1 : 0,
          m == MAP_FAILED ? strerrorname_np(err) : "-",
          (unsigned long long)(m == MAP_FAILED ? 0 : fnv(m, n)));
}

static int ucm_events; /* atomics: written by UCX's dispatch, which the compiler cannot see */
static void on_ucm_event(int type, void* event, void* arg) {
  (void)type;
  (void)event;
  (void)arg;
  __atomic_add_fetch(&ucm_events, 1, __ATOMIC_SEQ_CST);
}

/* -1 without libucm; else how many mmap events UCX saw for one anonymous mapping. */
static int ucm_sees_mappings(void) {
  typedef int (*set_handler_fn)(int, int, void (*)(int, void*, void*), void*);
  set_handler_fn set = (set_handler_fn)dlsym(RTLD_DEFAULT, "ucm_set_event_handler");
  if (set == NULL) return -1;
  if (set(1 /* UCM_EVENT_MMAP */, 0, on_ucm_event, NULL) != 0) return -2;
  __atomic_store_n(&ucm_events, 0, __ATOMIC_SEQ_CST);
  void* p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const int seen = __atomic_load_n(&ucm_events, __ATOMIC_SEQ_CST);
  if (p != MAP_FAILED) munmap(p, 4096);
  return seen;
}

int main(int argc, char** argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 3;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 2) return 2;
  char name[4096];
  snprintf(name, sizeof name, "%s.%d", argv[1], rank);
  out = fopen(name, "w");
  if (out == NULL) return 4;
  const long page = sysconf(_SC_PAGESIZE);
  for (int i = 2; i < argc; ++i) {
    int fd = open(argv[i], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
      fprintf(out, "%s open failed: %s\n", argv[i], strerror(errno));
      continue;
    }
    const size_t size = (size_t)st.st_size;
    void* m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    report(argv[i], "shared-whole", m, size);
    if (m != MAP_FAILED) munmap(m, size);
    const off_t off = (off_t)(size / 2 / (size_t)page) * page;
    m = mmap(NULL, size - (size_t)off, PROT_READ, MAP_PRIVATE, fd, off);
    report(argv[i], "private-middle", m, size - (size_t)off);
    if (m != MAP_FAILED) munmap(m, size - (size_t)off);
    m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) memset(m, 0x5a, size < 100 ? size : 100); /* copy-on-write */
    report(argv[i], "private-written", m, size);
    if (m != MAP_FAILED) munmap(m, size);
    close(fd);
  }
  fprintf(out, "rank %d ucm mmap events %d\n", rank, ucm_sees_mappings());
  fclose(out);
  MPI_Finalize();
  return 0;
}
