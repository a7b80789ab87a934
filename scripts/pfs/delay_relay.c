/* delay_relay: one-way latency for scripts/pfs/pfs.sh's link, where the kernel has no netem.
 *
 *   delay_relay HOST PORT DELAY_US      (ssh's ProxyCommand: stdin/stdout are ssh's side)
 *
 * Connects to HOST:PORT and relays bytes both ways. Each direction has a reader, which stamps
 * every piece it reads with "due = now + DELAY_US", and a writer, which sends each piece when it
 * is due. Pieces in flight overlap (a queue, not a sleep per piece), so a request and its reply
 * cost a round trip of 2 x DELAY_US whatever else is in flight, and the bandwidth stays the
 * link's. Bounded: at most QUEUE pieces of PIECE bytes per direction are in flight (16 MiB, more
 * than 10 Gbit/s x 1 ms); a full queue stops the reader, as a full socket would. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { PIECE = 256 * 1024, QUEUE = 64 };

struct piece {
  struct timespec due;
  ssize_t len; /* 0: end of stream */
  char bytes[PIECE];
};

struct direction {
  int in, out;
  int out_is_socket;
  struct piece* ring;
  unsigned head, tail; /* head: next to write; tail: next to fill */
  pthread_mutex_t lock;
  pthread_cond_t changed;
};

static long delay_ns;

static void die(const char* what) {
  fprintf(stderr, "delay_relay: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void* reader(void* arg) {
  struct direction* d = arg;
  for (;;) {
    pthread_mutex_lock(&d->lock);
    while (d->tail - d->head == QUEUE) pthread_cond_wait(&d->changed, &d->lock);
    struct piece* p = &d->ring[d->tail % QUEUE];
    pthread_mutex_unlock(&d->lock);
    ssize_t n;
    do n = read(d->in, p->bytes, PIECE);
    while (n < 0 && errno == EINTR);
    if (n < 0) n = 0; /* a reset connection ends the stream like EOF */
    clock_gettime(CLOCK_MONOTONIC, &p->due);
    p->due.tv_nsec += delay_ns;
    p->due.tv_sec += p->due.tv_nsec / 1000000000L;
    p->due.tv_nsec %= 1000000000L;
    p->len = n;
    pthread_mutex_lock(&d->lock);
    d->tail++;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
    if (n == 0) return NULL;
  }
}

static void* writer(void* arg) {
  struct direction* d = arg;
  for (;;) {
    pthread_mutex_lock(&d->lock);
    while (d->tail == d->head) pthread_cond_wait(&d->changed, &d->lock);
    struct piece* p = &d->ring[d->head % QUEUE];
    pthread_mutex_unlock(&d->lock);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &p->due, NULL) == EINTR) {
    }
    if (p->len == 0) {
      if (d->out_is_socket)
        shutdown(d->out, SHUT_WR);
      else
        close(d->out);
      return NULL;
    }
    for (ssize_t off = 0; off < p->len;) {
      ssize_t n = write(d->out, p->bytes + off, (size_t)(p->len - off));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) exit(0); /* the other side is gone: the session is over */
      off += n;
    }
    pthread_mutex_lock(&d->lock);
    d->head++;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
  }
}

static void start(struct direction* d, int in, int out, int out_is_socket, pthread_t t[2]) {
  d->in = in;
  d->out = out;
  d->out_is_socket = out_is_socket;
  d->ring = malloc(sizeof(struct piece) * QUEUE);
  if (d->ring == NULL) die("malloc");
  d->head = d->tail = 0;
  pthread_mutex_init(&d->lock, NULL);
  pthread_cond_init(&d->changed, NULL);
  if (pthread_create(&t[0], NULL, reader, d) != 0 || pthread_create(&t[1], NULL, writer, d) != 0)
    die("pthread_create");
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: delay_relay HOST PORT DELAY_US\n");
    return 2;
  }
  char* end;
  const long us = strtol(argv[3], &end, 10);
  if (*end != '\0' || us < 0 || us > 10000000) {
    fprintf(stderr, "delay_relay: DELAY_US '%s' is not a number of microseconds\n", argv[3]);
    return 2;
  }
  delay_ns = us * 1000L;
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
  struct addrinfo* ai;
  int rc = getaddrinfo(argv[1], argv[2], &hints, &ai);
  if (rc != 0) {
    fprintf(stderr, "delay_relay: %s:%s: %s\n", argv[1], argv[2], gai_strerror(rc));
    return 1;
  }
  const int sock = socket(ai->ai_family, ai->ai_socktype, 0);
  if (sock < 0) die("socket");
  if (connect(sock, ai->ai_addr, ai->ai_addrlen) != 0) die("connect");
  freeaddrinfo(ai);
  const int one = 1;
  if (setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) die("TCP_NODELAY");
  static struct direction up, down;
  pthread_t t[4];
  start(&up, STDIN_FILENO, sock, 1, t);
  start(&down, sock, STDOUT_FILENO, 0, t + 2);
  pthread_join(t[3], NULL); /* the server closed: done */
  return 0;
}
