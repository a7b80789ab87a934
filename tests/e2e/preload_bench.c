/* preload_bench: per-call cost of the preload library, as ratios from one run.
 *
 *   preload_bench <preload.so> <managed dir> <unmanaged dir> [iterations]
 *
 * Measures, in child processes started alternately without and with LD_PRELOAD (with it, the
 * child asks the library for a process-private cache through larder_init, so no launcher is
 * needed; LARDER_PREFIX is set in both, so the preload's path check runs on every call):
 *   open+read+close of an unmanaged 4 KiB file, stat of an unmanaged file,
 *   and open+read+close of a managed 4 KiB file that is a cache hit.
 * Each figure is the median over 7 alternating rounds. No threshold: it prints numbers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double orc(const char* path, long n) {
  char buf[4096];
  double t = now();
  for (long i = 0; i < n; ++i) {
    int fd = open(path, O_RDONLY);
    if (fd < 0 || read(fd, buf, sizeof buf) != (ssize_t)sizeof buf) abort();
    close(fd);
  }
  return (now() - t) / n * 1e9;
}

static double stats(const char* path, long n) {
  struct stat st;
  double t = now();
  for (long i = 0; i < n; ++i) {
    if (stat(path, &st) != 0) abort();
  }
  return (now() - t) / n * 1e9;
}

/* Child: prints "orc stat managed" in ns per call. */
static int child(const char* managed, const char* plain, long n) {
  char mfile[4096], pfile[4096];
  snprintf(mfile, sizeof mfile, "%s/f4k", managed);
  snprintf(pfile, sizeof pfile, "%s/f4k", plain);
  double m = 0;
  int (*init)(MPI_Comm) = (int (*)(MPI_Comm))dlsym(RTLD_DEFAULT, "larder_init");
  if (getenv("LD_PRELOAD") && init) {
    if (init(MPI_COMM_NULL) != 0) return 3;
    orc(mfile, 100); /* warm: the file's metadata and chunk are now cached */
    m = orc(mfile, n);
  }
  orc(pfile, n / 10);
  printf("%.1f %.1f %.1f\n", orc(pfile, n), stats(pfile, n), m);
  int (*fin)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "larder_finalize");
  if (getenv("LD_PRELOAD") && fin) fin();
  return 0;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  if (argc >= 5 && strcmp(argv[1], "--child") == 0) {
    return child(argv[2], argv[3], atol(argv[4]));
  }
  if (argc < 4) {
    fprintf(stderr, "usage: %s <preload.so> <managed dir> <unmanaged dir> [iterations]\n", argv[0]);
    return 2;
  }
  const char* iters = argc > 4 ? argv[4] : "200000";
  for (int d = 2; d <= 3; ++d) {
    char path[4096];
    snprintf(path, sizeof path, "%s/f4k", argv[d]);
    FILE* f = fopen(path, "w");
    for (int i = 0; i < 4096; ++i) fputc(i & 0xff, f);
    fclose(f);
  }
  enum { kRounds = 7 };
  double v[2][3][kRounds];
  for (int r = 0; r < kRounds; ++r) {
    for (int with = 0; with < 2; ++with) {
      int fds[2];
      if (pipe(fds) != 0) return 1;
      pid_t pid = fork();
      if (pid == 0) {
        dup2(fds[1], 1);
        if (with)
          setenv("LD_PRELOAD", argv[1], 1);
        else
          unsetenv("LD_PRELOAD");
        setenv("LARDER_PREFIX", argv[2], 1);
        setenv("LARDER_LOG", "error", 1);
        setenv("LARDER_LOCAL_FS", "cache", 1); /* the managed dir is on a local disk here */
        execl("/proc/self/exe", argv[0], "--child", argv[2], argv[3], iters, (char*)NULL);
        _exit(127);
      }
      close(fds[1]);
      char out[256] = "";
      ssize_t got = read(fds[0], out, sizeof out - 1);
      close(fds[0]);
      int status;
      waitpid(pid, &status, 0);
      if (got <= 0 ||
          sscanf(out, "%lf %lf %lf", &v[with][0][r], &v[with][1][r], &v[with][2][r]) != 3) {
        fprintf(stderr, "child failed (status %d)\n", status);
        return 1;
      }
    }
  }
  for (int w = 0; w < 2; ++w)
    for (int k = 0; k < 3; ++k) qsort(v[w][k], kRounds, sizeof(double), cmp);
  const int m = kRounds / 2;
  printf("per call (median of %d rounds of %s calls)   without     with preload   ratio   added\n",
         kRounds, iters);
  printf("unmanaged open+read(4 KiB)+close        %8.1f ns  %8.1f ns    %.3f  %+6.1f ns\n",
         v[0][0][m], v[1][0][m], v[1][0][m] / v[0][0][m], v[1][0][m] - v[0][0][m]);
  printf("unmanaged stat                          %8.1f ns  %8.1f ns    %.3f  %+6.1f ns\n",
         v[0][1][m], v[1][1][m], v[1][1][m] / v[0][1][m], v[1][1][m] - v[0][1][m]);
  printf(
      "managed open+read(4 KiB)+close, hit     %8s     %8.1f ns    %.3f (vs unmanaged without)\n",
      "-", v[1][2][m], v[1][2][m] / v[0][0][m]);
  return 0;
}
