/* posix_calls: every call family the preload library serves, on managed and unmanaged files.
 * Prints one line per call: its result, errno when it failed, and a hash of the bytes it
 * produced. The test runs it with and without the preload and compares the outputs line by line.
 *
 * Usage: posix_calls <managed dir> <unmanaged dir>
 * The managed dir holds big.bin (several chunks), small.txt (text lines), sub/ (a directory);
 * the unmanaged dir holds the same big.bin and small.txt. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fnv.h"

static void report(const char* dir, const char* what, long rc, int err, uint64_t hash) {
  const char* tag = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
  printf("%s %-28s rc=%ld errno=%s hash=%016llx\n", tag, what, rc,
         rc < 0 ? strerrorname_np(err) : "-", (unsigned long long)hash);
}

static char* join(const char* dir, const char* name) {
  static char buf[8][4096];
  static int slot;
  char* out = buf[slot++ % 8];
  snprintf(out, 4096, "%s/%s", dir, name);
  return out;
}

static void stat_line(const char* dir, const char* what, int rc, int err, const struct stat* st) {
  char text[256] = "";
  if (rc == 0) {
    snprintf(text, sizeof text, "%lld %o %lld %lld %ld", (long long)st->st_size,
             (unsigned)st->st_mode, (long long)st->st_ino, (long long)st->st_mtim.tv_sec,
             (long)st->st_mtim.tv_nsec);
  }
  report(dir, what, rc, err, fnv(text, strlen(text)));
}

static void run(const char* dir) {
  static char buf[1 << 20], buf2[1 << 20];
  const char* big = join(dir, "big.bin");
  const char* small = join(dir, "small.txt");
  long rc;
  int err;

  /* open, read to EOF in odd pieces, close */
  int fd = open(big, O_RDONLY | O_CLOEXEC);
  report(dir, "open big", fd >= 0 ? 0 : fd, errno, 0);
  uint64_t h = 1469598103934665603ull;
  ssize_t n;
  long total = 0;
  while ((n = read(fd, buf, 70001)) > 0) {
    h ^= fnv(buf, (size_t)n);
    total += n;
  }
  report(dir, "read to eof", total, errno, h);
  errno = 0;
  rc = read(fd, buf, 10);
  report(dir, "read at eof", rc, errno, 0);

  /* lseek and read */
  rc = lseek(fd, -5000, SEEK_END);
  report(dir, "lseek end-5000", rc, errno, 0);
  n = read(fd, buf, 10000);
  report(dir, "read after lseek", n, errno, fnv(buf, n > 0 ? (size_t)n : 0));
  rc = lseek(fd, 100, SEEK_SET);
  rc = lseek(fd, 50, SEEK_CUR);
  report(dir, "lseek cur", rc, errno, 0);
  errno = 0;
  rc = lseek(fd, -1, SEEK_SET);
  report(dir, "lseek negative", rc, errno, 0);

  /* pread at offsets, past EOF, negative */
  n = pread(fd, buf, 123457, 65530);
  report(dir, "pread across chunks", n, errno, fnv(buf, n > 0 ? (size_t)n : 0));
  n = pread(fd, buf, 100, 1 << 30);
  report(dir, "pread past eof", n, errno, 0);
  errno = 0;
  n = pread(fd, buf, 100, -1);
  err = errno;
  report(dir, "pread negative", n, err, 0);

  /* readv and preadv */
  struct iovec iov[3] = {{buf, 1000}, {buf + 1000, 70000}, {buf + 71000, 10}};
  lseek(fd, 10, SEEK_SET);
  n = readv(fd, iov, 3);
  report(dir, "readv", n, errno, fnv(buf, n > 0 ? (size_t)n : 0));
  report(dir, "position after readv", lseek(fd, 0, SEEK_CUR), errno, 0);
  n = preadv(fd, iov, 3, 200000);
  report(dir, "preadv", n, errno, fnv(buf, n > 0 ? (size_t)n : 0));

  /* fstat and fcntl */
  struct stat st;
  rc = fstat(fd, &st);
  stat_line(dir, "fstat", (int)rc, errno, &st);
  rc = fcntl(fd, F_GETFL) & O_ACCMODE;
  report(dir, "fcntl getfl accmode", rc, errno, 0);
  rc = fcntl(fd, F_GETFD);
  report(dir, "fcntl getfd", rc, errno, 0);

  /* dup shares the position; dup2 and F_DUPFD make managed copies */
  lseek(fd, 1000, SEEK_SET);
  int d1 = dup(fd);
  n = read(d1, buf, 100);
  report(dir, "read from dup", n, errno, fnv(buf, (size_t)n));
  report(dir, "position shared", lseek(fd, 0, SEEK_CUR), errno, 0);
  int d2 = dup2(fd, 100);
  n = pread(d2, buf, 500, 3);
  report(dir, "pread from dup2", d2 == 100 ? n : -1, errno, fnv(buf, (size_t)n));
  int d3 = fcntl(fd, F_DUPFD_CLOEXEC, 200);
  n = pread(d3, buf, 500, 7);
  report(dir, "pread from F_DUPFD", d3 >= 200 ? n : -1, errno, fnv(buf, (size_t)n));
  close(d1);
  close(d2);
  close(d3);

  /* mmap of the whole file and at an offset */
  void* m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  report(dir, "mmap whole", m == MAP_FAILED ? -1 : 0, errno,
         m == MAP_FAILED ? 0 : fnv(m, (size_t)st.st_size));
  if (m != MAP_FAILED) munmap(m, (size_t)st.st_size);
  m = mmap(NULL, 10000, PROT_READ, MAP_PRIVATE, fd, 65536);
  report(dir, "mmap offset", m == MAP_FAILED ? -1 : 0, errno, m == MAP_FAILED ? 0 : fnv(m, 10000));
  if (m != MAP_FAILED) munmap(m, 10000);
  errno = 0;
  m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  report(dir, "mmap shared writable", m == MAP_FAILED ? -1 : 0, errno, 0);

  /* sendfile into a pipe-less temporary file */
  char tmpl[] = "/tmp/lpl-sendfile-XXXXXX";
  int out = mkstemp(tmpl);
  off_t off = 1234;
  n = sendfile(out, fd, &off, 100000);
  n = pread(out, buf2, sizeof buf2, 0);
  report(dir, "sendfile", n, errno, fnv(buf2, n > 0 ? (size_t)n : 0));
  close(out);
  unlink(tmpl);

  rc = close(fd);
  report(dir, "close", rc, errno, 0);
  errno = 0;
  rc = read(fd, buf, 10);
  report(dir, "read closed fd", rc, errno, 0);

  /* stdio */
  FILE* f = fopen(small, "r");
  report(dir, "fopen", f ? 0 : -1, errno, 0);
  if (f) {
    h = 0;
    while (fgets(buf, 200, f)) h ^= fnv(buf, strlen(buf));
    report(dir, "fgets to eof", feof(f), errno, h);
    fseek(f, 10, SEEK_SET);
    size_t got = fread(buf, 1, 50, f);
    report(dir, "fseek fread", (long)got, errno, fnv(buf, got));
    report(dir, "ftell", ftell(f), errno, 0);
    report(dir, "fileno valid", fileno(f) >= 0, errno, 0);
    report(dir, "fclose", fclose(f), errno, 0);
  }
  int sfd = open(small, O_RDONLY);
  lseek(sfd, 5, SEEK_SET);
  FILE* g = fdopen(dup(sfd), "r");
  size_t got = g ? fread(buf, 1, 64, g) : 0;
  report(dir, "fdopen dup fread", g ? (long)got : -1, errno, fnv(buf, got));
  if (g) fclose(g);
  close(sfd);

  /* stat family and access, found and missing */
  rc = stat(big, &st);
  stat_line(dir, "stat", (int)rc, errno, &st);
  rc = lstat(big, &st);
  stat_line(dir, "lstat", (int)rc, errno, &st);
  rc = fstatat(AT_FDCWD, small, &st, 0);
  stat_line(dir, "fstatat", (int)rc, errno, &st);
  struct statx sx;
  rc = statx(AT_FDCWD, big, 0, STATX_BASIC_STATS, &sx);
  report(dir, "statx size", rc == 0 ? (long)sx.stx_size : rc, errno, rc == 0 ? sx.stx_mode : 0);
  errno = 0;
  rc = stat(join(dir, "missing.bin"), &st);
  report(dir, "stat missing", rc, errno, 0);
  errno = 0;
  rc = stat(join(dir, "missing.bin"), &st);
  report(dir, "stat missing again", rc, errno, 0);
  errno = 0;
  rc = stat(join(dir, "big.bin/child"), &st);
  report(dir, "stat below a file", rc, errno, 0);
  rc = stat(join(dir, "sub"), &st);
  report(dir, "stat dir is dir", rc == 0 ? S_ISDIR(st.st_mode) : rc, errno, 0);
  rc = access(big, R_OK);
  report(dir, "access R_OK", rc, errno, 0);
  errno = 0;
  rc = access(join(dir, "missing.bin"), F_OK);
  report(dir, "access missing", rc, errno, 0);
  rc = faccessat(AT_FDCWD, small, R_OK, AT_EACCESS);
  report(dir, "faccessat", rc, errno, 0);

  /* open errors */
  errno = 0;
  rc = open(join(dir, "missing.bin"), O_RDONLY);
  report(dir, "open missing", rc, errno, 0);
  errno = 0;
  rc = open(join(dir, "big.bin/child"), O_RDONLY);
  report(dir, "open below a file", rc, errno, 0);
  int dfd = open(join(dir, "sub"), O_RDONLY);
  errno = 0;
  rc = read(dfd, buf, 10);
  report(dir, "read a directory", rc, errno, 0);
  close(dfd);
  errno = 0;
  FILE* nf = fopen(join(dir, "missing.bin"), "r");
  report(dir, "fopen missing", nf ? 0 : -1, errno, 0);

  /* listing */
  DIR* dp = opendir(dir);
  h = 0;
  long entries = 0;
  struct dirent* e;
  while (dp && (e = readdir(dp)) != NULL) {
    h ^= fnv(e->d_name, strlen(e->d_name)) + e->d_type;
    ++entries;
  }
  report(dir, "readdir", dp ? entries : -1, errno, h);
  if (dp) {
    rewinddir(dp);
    e = readdir(dp);
    report(dir, "rewinddir", e != NULL, errno, 0);
    closedir(dp);
  }
  struct dirent** names;
  int count = scandir(dir, &names, NULL, alphasort);
  h = 0;
  for (int i = 0; i < count; ++i) {
    h = fnv(names[i]->d_name, strlen(names[i]->d_name)) ^ (h * 31);
    free(names[i]);
  }
  if (count >= 0) free(names);
  report(dir, "scandir alphasort", count, errno, h);
  errno = 0;
  dp = opendir(join(dir, "missing"));
  report(dir, "opendir missing", dp ? 0 : -1, errno, 0);

  /* /proc/self/fd/N and /dev/fd/N of an open descriptor name its file: readlink gives the path,
   * and opening the alias reads the file's bytes (never the placeholder's empty /dev/null) */
  {
    const int afd = open(join(dir, "big.bin"), O_RDONLY);
    char alias[64], target[4096];
    snprintf(alias, sizeof alias, "/proc/self/fd/%d", afd);
    ssize_t len = readlink(alias, target, sizeof target - 1);
    if (len >= 0) target[len] = '\0';
    const char* want = join(dir, "big.bin");
    report(dir, "readlink /proc/self/fd", len >= 0 && strcmp(target, want) == 0 ? 0 : -1, errno, 0);
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) snprintf(alias, sizeof alias, "/dev/fd/%d", afd);
      const int rfd = open(alias, O_RDONLY);
      n = rfd >= 0 ? pread(rfd, buf, sizeof buf, 5000) : -1;
      report(dir, pass == 0 ? "read via /proc/self/fd/N" : "read via /dev/fd/N", n, errno,
             fnv(buf, n > 0 ? (size_t)n : 0));
      if (rfd >= 0) close(rfd);
    }
    close(afd);
  }

  /* a write under the prefix goes to the file system, and is read back from there */
  const char* w = join(dir, "written.txt");
  int wfd = open(w, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  rc = write(wfd, "written by the test\n", 20);
  close(wfd);
  wfd = open(w, O_RDONLY);
  n = read(wfd, buf, 100);
  report(dir, "read back a written file", n, errno, fnv(buf, n > 0 ? (size_t)n : 0));
  close(wfd);
  unlink(w);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <managed dir> <unmanaged dir>\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  run(argv[1]);
  run(argv[2]);
  return 0;
}
