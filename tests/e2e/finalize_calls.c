/* finalize_calls: MPI_Finalize while the program still reads managed files, the ways C programs
 * do it. Every byte read is checked against the pattern the driver wrote (byte at offset o of
 * file k is (o * 131 + o / 4093 + k) & 0xff); a mismatch exits 3.
 *
 * Usage: finalize_calls <mode> <file>...
 *   main     MPI_Init, read everything, MPI_Finalize on the main thread
 *   thread   MPI_Init_thread(MPI_THREAD_MULTIPLE), read, MPI_Finalize from another thread
 *   readers  MPI_Init, then 8 threads read the files in 64 MiB preads, round after round, while
 *            the main thread calls MPI_Finalize and returns from main (the readers are still
 *            reading when the process exits): the reported crash, SIGSEGV in 6 of 6 runs.
 * Prints "ok <mode>" on success. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { kThreads = 8, kPiece = 64 << 20 };

static char** files;
static int nfiles;
static unsigned char** want; /* each file's expected contents, computed once (fast to compare) */
static size_t* want_size;
static atomic_int rounds_done;

static void make_expected(void) {
  want = calloc((size_t)nfiles, sizeof *want);
  want_size = calloc((size_t)nfiles, sizeof *want_size);
  for (int k = 0; k < nfiles; ++k) {
    struct stat st;
    if (stat(files[k], &st) != 0 || (want[k] = malloc((size_t)st.st_size + 1)) == NULL) exit(2);
    want_size[k] = (size_t)st.st_size;
    for (uint64_t o = 0; o < want_size[k]; ++o) {
      want[k][o] = (unsigned char)((o * 131 + o / 4093 + (uint64_t)k) & 0xff);
    }
  }
}

/* Reads file k at `off` and checks the bytes; returns the bytes read, or exits. */
static ssize_t read_check(int fd, int k, unsigned char* buf, size_t n, off_t off) {
  const ssize_t got = pread(fd, buf, n, off);
  if (got < 0) {
    perror("pread");
    exit(2);
  }
  if ((size_t)off + (size_t)got > want_size[k] || memcmp(buf, want[k] + off, (size_t)got) != 0) {
    fprintf(stderr, "wrong bytes in %s at %lld\n", files[k], (long long)off);
    _exit(3);
  }
  return got;
}

static void read_all(unsigned char* buf, size_t piece) {
  for (int k = 0; k < nfiles; ++k) {
    const int fd = open(files[k], O_RDONLY);
    if (fd < 0) {
      perror(files[k]);
      exit(2);
    }
    off_t off = 0;
    ssize_t got;
    while ((got = read_check(fd, k, buf, piece, off)) > 0) off += got;
    close(fd);
  }
}

static void* reader(void* arg) {
  (void)arg;
  unsigned char* buf = malloc(kPiece);
  if (buf == NULL) exit(2);
  for (;;) { /* until the process exits */
    read_all(buf, kPiece);
    atomic_fetch_add(&rounds_done, 1);
  }
  return NULL;
}

static void* finalizer(void* arg) {
  *(int*)arg = MPI_Finalize();
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: finalize_calls main|thread|readers <file>...\n");
    return 2;
  }
  const char* mode = argv[1];
  files = argv + 2;
  nfiles = argc - 2;
  make_expected();
  unsigned char* buf = malloc(kPiece);
  if (buf == NULL) return 2;
  if (strcmp(mode, "thread") == 0) {
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 4;
    read_all(buf, 1 << 20);
    int rc = -1;
    pthread_t t;
    pthread_create(&t, NULL, finalizer, &rc);
    pthread_join(t, NULL);
    if (rc != MPI_SUCCESS) return 5;
  } else if (strcmp(mode, "main") == 0) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 4;
    read_all(buf, 1 << 20);
    if (MPI_Finalize() != MPI_SUCCESS) return 5;
  } else if (strcmp(mode, "readers") == 0) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 4;
    read_all(buf, kPiece); /* cached now */
    pthread_t t[kThreads];
    for (int i = 0; i < kThreads; ++i) pthread_create(&t[i], NULL, reader, NULL);
    while (atomic_load(&rounds_done) < 1) sched_yield(); /* reads are under way */
    if (MPI_Finalize() != MPI_SUCCESS) return 5;
  } else {
    return 2;
  }
  free(buf);
  printf("ok %s\n", mode);
  fflush(stdout);
  return 0; /* readers: the threads are still reading while the process exits */
}
