#include "apps/larder-readbench/measure.hpp"

#include <fcntl.h>
#include <larder/larder.h>
#include <mpi.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#if defined(__x86_64__) || defined(_M_X64)
#include <xxh_x86dispatch.h>  // XXH3 as the cache runs it (runtime/common/content_hash.cpp)
#endif

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "runtime/transport/transport.hpp"  // piece_of

namespace larder::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string file_for(const Plan& p) {
  return fmt::format("{}/chunks-{}x{}.bin", p.dir, p.chunks, p.chunk);
}

void ensure_file(const Plan& p, int rank) {
  const std::string path = file_for(p);
  if (rank == 0) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 ||
        static_cast<std::uint64_t>(st.st_size) != p.chunk * p.chunks) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
      std::vector<unsigned char> buf(p.chunk);
      for (std::uint64_t c = 0; c < p.chunks; ++c) {
        std::memset(buf.data(), static_cast<int>(c & 0xff), buf.size());
        if (::write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) {
          throw std::runtime_error("cannot write " + path);
        }
      }
      ::close(fd);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

void check(bool ok, const std::string& what) {
  if (!ok)
    throw std::runtime_error(what + ": " + larder_last_error() + " / " + std::strerror(errno));
}

// One pass over every chunk of the file through Larder.
std::uint64_t read_pass(int fd, const Plan& p, std::vector<char>& buf) {
  std::uint64_t ops = 0;
  for (std::uint64_t c = 0; c < p.chunks; ++c) {
    const ssize_t n = larder_pread(fd, buf.data(), p.chunk, static_cast<off_t>(c * p.chunk));
    check(n == static_cast<ssize_t>(p.chunk), "larder_pread");
    ++ops;
  }
  return ops;
}

double cpu_clock(clockid_t id) {
  timespec t{};
  if (::clock_gettime(id, &t) != 0) throw std::runtime_error("clock_gettime failed");
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// CPU time of this process's threads: all of them, or all but the calling (main) one.
double process_cpu() {
  return cpu_clock(CLOCK_PROCESS_CPUTIME_ID);
}
double other_threads_cpu() {
  return process_cpu() - cpu_clock(CLOCK_THREAD_CPUTIME_ID);
}

}  // namespace

const char* locality_name(Locality l) {
  switch (l) {
    case Locality::kSelf:
      return "self";
    case Locality::kNode:
      return "node";
    case Locality::kRemote:
      return "remote";
  }
  return "?";
}

Sample measure_hits(const Plan& p, Locality locality) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ensure_file(p, rank);
  ::setenv("LARDER_PREFIX", p.dir.c_str(), 1);
  ::setenv("LARDER_LOCAL_FS", "cache", 1);  // its local directory stands in for the PFS
  ::setenv("LARDER_CHUNK", std::to_string(p.chunk).c_str(), 1);
  ::setenv("LARDER_NODE_SIZE", locality == Locality::kRemote ? "1" : "0", 1);
  // A remote reader's node keeps no copy (no memory budget): every read crosses the transport,
  // instead of the first copying each chunk into the node and the rest being node-local hits.
  const int reader = locality == Locality::kSelf ? 0 : 1;
  if ((locality == Locality::kRemote && rank == reader) || p.disk) {
    ::setenv("LARDER_MEM", "0", 1);
  } else {
    ::unsetenv("LARDER_MEM");
  }
  if (p.disk) {
    const std::string local = p.dir + "/local";
    if (::mkdir(local.c_str(), 0700) != 0 && errno != EEXIST) {
      throw std::runtime_error("cannot create " + local + ": " + std::strerror(errno));
    }
    // Room for the file on every rank's share of the node's disk budget.
    ::setenv("LARDER_DISK", std::to_string(4 * p.chunk * p.chunks).c_str(), 1);
    ::setenv("LARDER_DIR", local.c_str(), 1);
  } else {
    ::unsetenv("LARDER_DISK");
  }
  ::setenv("LARDER_TRANSPORT", p.transport.c_str(), 1);
  ::setenv("LARDER_VERIFY", p.verify ? "on" : "off", 1);
  ::setenv("LARDER_DIR_SLOTS", "262144", 1);
  check(larder_init(MPI_COMM_WORLD) == LARDER_OK, "larder_init");
  std::vector<char> buf(p.chunk);
  const std::string path = file_for(p);
  // Rank 0 owns every chunk: it opens and reads the file before the reader opens it (a reader
  // without a budget that opened it first could claim the first chunk, find no room, and send
  // every rank to the file system for it).
  int fd = -1;
  if (rank == 0) {
    fd = larder_open(path.c_str(), O_RDONLY);
    check(fd >= 0, "larder_open " + path);
    read_pass(fd, p, buf);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank != 0) {
    fd = larder_open(path.c_str(), O_RDONLY);
    check(fd >= 0, "larder_open " + path);
  }
  Sample s;
  if (rank == reader)
    read_pass(fd, p, buf);  // warm: directory answers remembered, endpoints connected
  // The measured window, bracketed by barriers so that the serving rank's CPU is counted over it.
  MPI_Barrier(MPI_COMM_WORLD);
  const double serving_before = rank == 0 && reader != 0 ? other_threads_cpu() : 0;
  if (rank == reader) {
    const std::uint64_t passes = std::max<std::uint64_t>(1, p.target / (p.chunk * p.chunks));
    const double cpu0 = process_cpu();
    const auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < passes; ++i) s.ops += read_pass(fd, p, buf);
    s.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    s.reader_cpu_s = process_cpu() - cpu0;
    s.bytes = s.ops * p.chunk;
  }
  if (p.waiters_sleep) {
    MPI_Request done = MPI_REQUEST_NULL;
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    for (int finished = 0;;) {
      MPI_Test(&done, &finished, MPI_STATUS_IGNORE);
      if (finished != 0) break;
      const timespec ms{0, 1000000};
      ::nanosleep(&ms, nullptr);
    }
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const double serving = rank == 0 && reader != 0 ? other_threads_cpu() - serving_before : 0;
  larder_close(fd);
  MPI_Barrier(MPI_COMM_WORLD);
  larder_stats_t st{};
  larder_stats_get(&st);
  if (rank == reader && locality == Locality::kRemote && st.hits_remote == 0) {
    throw std::runtime_error("remote measurement saw no remote hits");
  }
  check(larder_finalize() == LARDER_OK, "larder_finalize");
  // Bring the reader's figures to rank 0.
  double v[4] = {static_cast<double>(s.bytes), static_cast<double>(s.ops), s.seconds,
                 s.reader_cpu_s};
  if (reader != 0) {
    if (rank == reader) MPI_Send(v, 4, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
    if (rank == 0) {
      MPI_Recv(v, 4, MPI_DOUBLE, reader, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      s = Sample{static_cast<std::uint64_t>(v[0]), static_cast<std::uint64_t>(v[1]), v[2], v[3],
                 serving};
    }
  }
  return s;
}

Sample measure_memcpy(const Plan& p) {
  std::vector<char> src(p.chunk * p.chunks, 1);
  std::vector<char> dst(p.chunk, 0);
  for (std::uint64_t c = 0; c < p.chunks; ++c)
    std::memcpy(dst.data(), src.data() + c * p.chunk, p.chunk);
  const std::uint64_t passes = std::max<std::uint64_t>(1, p.target / (p.chunk * p.chunks));
  Sample s;
  const auto t0 = Clock::now();
  for (std::uint64_t i = 0; i < passes; ++i) {
    for (std::uint64_t c = 0; c < p.chunks; ++c) {
      std::memcpy(dst.data(), src.data() + c * p.chunk, p.chunk);
      asm volatile("" : : "r"(dst.data()) : "memory");  // keep the copy
      ++s.ops;
    }
  }
  s.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  s.bytes = s.ops * p.chunk;
  return s;
}

Sample measure_hash(const Plan& p) {
  std::vector<char> src(p.chunk * p.chunks, 1);
  const std::uint64_t passes = std::max<std::uint64_t>(1, p.target / (p.chunk * p.chunks));
  std::uint64_t sink = 0;
  for (std::uint64_t c = 0; c < p.chunks; ++c)
    sink ^= XXH3_64bits(src.data() + c * p.chunk, p.chunk);
  Sample s;
  const auto t0 = Clock::now();
  for (std::uint64_t i = 0; i < passes; ++i) {
    for (std::uint64_t c = 0; c < p.chunks; ++c) {
      sink ^= XXH3_64bits(src.data() + c * p.chunk, p.chunk);
      ++s.ops;
    }
  }
  s.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  s.bytes = s.ops * p.chunk;
  asm volatile("" : : "r"(sink) : "memory");
  return s;
}

Sample measure_hash_cached(const Plan& p) {
  const std::uint64_t piece = larder::piece_of(p.chunk);  // a remote read's piece size
  std::vector<char> buf(piece, 1);
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) throw std::runtime_error("XXH3_createState failed");
  const std::uint64_t rounds = std::max<std::uint64_t>(1, p.target / piece);
  std::uint64_t sink = XXH3_64bits(buf.data(), buf.size());  // warm: the buffer in the cache
  Sample s;
  const auto t0 = Clock::now();
  for (std::uint64_t i = 0; i < rounds; ++i) {
    (void)XXH3_64bits_reset(state);
    (void)XXH3_64bits_update(state, buf.data(), buf.size());
    sink ^= XXH3_64bits_digest(state);
    ++s.ops;
  }
  s.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  s.bytes = s.ops * piece;
  XXH3_freeState(state);
  asm volatile("" : : "r"(sink) : "memory");
  return s;
}

}  // namespace larder::bench
