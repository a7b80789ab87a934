/*
 * Larder: a collective read cache for MPI training jobs. C API.
 *
 * Conventions (stated once, for every function below):
 *  - Lifecycle and stats calls return a larder_status_t; larder_last_error() gives the message
 *    of the calling thread's last failure. Out-parameters come last and are set only on success.
 *  - File calls (larder_open ... larder_stat) behave exactly like their POSIX namesakes: the
 *    result, or -1 with errno set, with the errno the file system itself would have given.
 *    A path outside LARDER_PREFIX, or a file opened for writing, is passed straight to the
 *    operating system (with no prefix set, every regular file opened read-only is cached).
 *  - All file calls are thread-safe. larder_init and larder_finalize are collective over the
 *    communicator given to larder_init and must be called by one thread of each rank.
 *    The other collective calls (larder_stage, larder_job_stats_json, larder_summary_line with
 *    job = 1) are collective over the communicator Larder runs on (MPI_COMM_WORLD when MPI_Init
 *    started it): every rank calls them, one thread per rank, in the same order.
 *  - A forked child of a process that runs Larder does not share its session: every call here
 *    behaves there as if Larder were not initialized (its reads are served by its rank only
 *    through liblarder_preload.so; see larder_active).
 *  - Descriptors returned by larder_open are real descriptor numbers reserved for Larder; use
 *    them only with larder_* calls. They are valid until larder_close or larder_finalize.
 */
#ifndef LARDER_LARDER_H_
#define LARDER_LARDER_H_

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  LARDER_OK = 0,
  LARDER_ERR_INVALID_ARGUMENT = 1, /* bad configuration or argument; see larder_last_error() */
  LARDER_ERR_IO = 2,
  LARDER_ERR_NO_SPACE = 3,
  LARDER_ERR_TIMEOUT = 4,
  LARDER_ERR_TRANSPORT = 5,
  LARDER_ERR_MPI = 6,
  LARDER_ERR_NOT_INITIALIZED = 7,
  LARDER_ERR_ALREADY_INITIALIZED = 8,
  LARDER_ERR_NO_MEMORY = 9,
  LARDER_ERR_INTERNAL = 10
} larder_status_t;

/* Starts Larder over `comm` (collective; MPI must be initialized with MPI_THREAD_MULTIPLE for a
 * communicator of more than one rank). MPI_COMM_NULL starts a cache private to this process.
 * Settings come from the environment (LARDER_*; docs/user-guide.md).
 * When Larder is already running because MPI_Init started it (the PMPI hooks of liblarder.so or
 * of the preload library, with LARDER_PREFIX set), a larder_init over MPI_COMM_WORLD or a
 * communicator congruent to it joins that cache: LARDER_OK, nothing is started, and the call
 * counts one reference for larder_finalize to drop. Over any other communicator, and whenever
 * Larder runs because of an earlier larder_init: LARDER_ERR_ALREADY_INITIALIZED. */
larder_status_t larder_init(MPI_Comm comm);
/* Stops Larder (collective): writes LARDER_STATS, prints the summary line on rank 0, removes
 * every node-local file of the job. When MPI_Init started Larder, larder_finalize only drops a
 * reference taken by larder_init (Larder stops in MPI_Finalize); one with no larder_init to
 * match returns LARDER_ERR_NOT_INITIALIZED and stops nothing. */
larder_status_t larder_finalize(void);
/* 1 when Larder is running in this process, else 0. Local, thread-safe. */
int larder_initialized(void);

/* How Larder serves this process's reads of managed files (larder_active). */
typedef enum {
  LARDER_ACTIVE_OFF = 0,   /* not at all: reads go straight to the file system */
  LARDER_ACTIVE_RANK = 1,  /* Larder runs in this process (larder_init, or MPI_Init's hooks) */
  LARDER_ACTIVE_WORKER = 2 /* a worker of a rank (a forked or spawned child, e.g. a PyTorch
                              DataLoader worker) under liblarder_preload.so: the rank's cache
                              serves its reads; the stats calls here answer NOT_INITIALIZED
                              (the worker's reads are counted by its rank) */
} larder_active_t;
/* One of larder_active_t. Local, thread-safe, cheap; never fails. */
int larder_active(void);
/* The message of this thread's last failed larder_* call ("" if none). */
const char* larder_last_error(void);

int larder_open(const char* path, int flags, ...);
int larder_close(int fd);
ssize_t larder_read(int fd, void* buf, size_t count);
ssize_t larder_pread(int fd, void* buf, size_t count, off_t offset);
off_t larder_lseek(int fd, off_t offset, int whence);
int larder_fstat(int fd, struct stat* st);
int larder_stat(const char* path, struct stat* st);
/* 1 when `path` is served by the cache (under a prefix, by its canonical name), else 0. */
int larder_is_managed(const char* path);

/* What larder_stage did, for the whole job (the same on every rank). */
typedef struct larder_stage_result {
  uint64_t files;  /* regular managed files found under the paths */
  uint64_t bytes;  /* their total size */
  uint64_t chunks; /* their chunks (LARDER_CHUNK) */
  uint64_t
      not_cached;   /* chunks the cache could not take (budget full...): read from the PFS later */
  uint64_t skipped; /* paths not staged: outside LARDER_PREFIX, missing, unreadable, special */
} larder_stage_result_t;

/* Collective: loads every file named in `paths` (files, or directories walked recursively;
 * symlinks followed to files, not to directories) into the job's cache before it is read. Every
 * rank must pass the same list. Each chunk is read from the PFS by one rank, the chunks spread
 * evenly over the ranks (and so over the nodes' memory), all ranks reading in parallel; when it
 * returns on any rank, every chunk is loaded. Paths are resolved like larder_open's; what cannot
 * be staged is counted, not an error. `result_p` may be NULL. */
larder_status_t larder_stage(const char* const* paths, size_t npaths,
                             larder_stage_result_t* result_p);

/* One read a rank will make, for larder_schedule. */
typedef struct larder_read {
  const char* path; /* resolved like larder_open's */
  uint64_t offset;  /* the read's first byte */
  uint64_t length;  /* bytes from offset; 0: to the end of the file */
} larder_read_t;

/* larder_schedule's flags. */
#define LARDER_SCHEDULE_APPEND 1u /* after what is left of the schedule, not instead of it */

/* Hands Larder this rank's coming reads, in the order it will make them (an epoch's samples):
 * Larder makes their chunks ready on the node ahead of the reads, in that order, several PFS
 * requests at a time, each chunk read from the PFS once for the job and copied once to each node
 * that will read it, while the node's budget has room. Local, not collective: each rank hands
 * its own; returns at once (the reads are copied). Without LARDER_SCHEDULE_APPEND the schedule
 * replaces what is left of the earlier one and positions restart at 0 (a new epoch); with it,
 * it is appended (the next epoch's order while this one ends). A read the schedule does not name
 * is served as always; an entry that names nothing Larder can cache (outside LARDER_PREFIX,
 * missing, not a regular file) is skipped. The reads are the application's to make: a schedule
 * only moves chunks ahead. nreads 0 without the flag cancels the schedule. */
larder_status_t larder_schedule(const larder_read_t* reads, size_t nreads, unsigned flags);
/* The reads have reached entry `position` of the schedule (counted from the first entry of the
 * last call without LARDER_SCHEDULE_APPEND): the prefetch skips what lies behind it and runs at
 * most LARDER_PREFETCH_AHEAD entries past it. Local, cheap, thread-safe. */
larder_status_t larder_schedule_position(uint64_t position);
/* This rank's place in Larder's job (its communicator's rank and size). Local. */
larder_status_t larder_job(int* rank_p, int* size_p);

/* This rank's counters so far (the job totals are written at finalize). */
typedef struct larder_stats {
  uint64_t pfs_bytes_read;
  uint64_t pfs_read_ops;
  uint64_t pfs_stat_ops;
  uint64_t pfs_list_ops;
  uint64_t hits_self;
  uint64_t hits_node;
  uint64_t hits_remote;
  uint64_t misses;
  uint64_t fallbacks;
  uint64_t transport_bytes;
} larder_stats_t;

/* Local, thread-safe. */
larder_status_t larder_stats_get(larder_stats_t* stats_p);
/* This rank's counters as JSON (the format of LARDER_STATS, with "ranks": 1), its worker
 * processes' reads so far included (each counted once, alive or gone). Writes at most
 * `size` bytes including the terminating NUL into `buf` (NULL or 0: nothing); *needed_p
 * receives the full length + 1, so a call with a smaller buffer can be repeated with one of
 * that size. Local, thread-safe. LARDER_ERR_NOT_INITIALIZED when Larder does not run here. */
larder_status_t larder_stats_json(char* buf, size_t size, size_t* needed_p);
/* The job's counters so far: every rank's summed (the latency maximum is the largest), as JSON
 * in the format of LARDER_STATS ("ranks" is the job's). Collective (see the conventions above);
 * the result, and so *needed_p, is the same on every rank, so a retry with a larger buffer is
 * made by every rank. For a cache private to the process, the same as larder_stats_json.
 * Buffer contract as larder_stats_json. */
larder_status_t larder_job_stats_json(char* buf, size_t size, size_t* needed_p);
/* The one-line summary rank 0 prints at the end ("larder: 2 ranks, pfs read 1.2 MiB in 23 ops
 * ..."), of this rank's counters (job = 0: local, thread-safe) or of the job's (job != 0:
 * collective, as larder_job_stats_json). Buffer contract as larder_stats_json. */
larder_status_t larder_summary_line(int job, char* buf, size_t size, size_t* needed_p);

#ifdef __cplusplus
}
#endif

#endif /* LARDER_LARDER_H_ */
