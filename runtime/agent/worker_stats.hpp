// WorkerStats: the counters of a rank's worker processes, in a shared-memory file of the job
// (<shm job dir>/workers-<rank>.stats) that the rank folds into its own stats.
//
// A worker adds to its own slot with relaxed atomics, exactly as a rank adds to its Stats: no
// message, no lock, nothing lost however long the worker lives. The rank gives a slot to each
// worker connection (kHello) and folds it into its stats when the connection ends and, for the
// workers still alive, at finalize (after its agent stopped), so `app.bytes_read`, the hits and
// the latency histogram are the same whether a read happens in the rank or in its workers.
// The file is created with its whole size backed (fallocate): a full /dev/shm fails here,
// never as SIGBUS later; workers then count privately and send their counters at exit.
#ifndef LARDER_RUNTIME_AGENT_WORKER_STATS_HPP_
#define LARDER_RUNTIME_AGENT_WORKER_STATS_HPP_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/common/status.hpp"
#include "runtime/stats/stats.hpp"

namespace larder::agent {

class WorkerStatsFile {
 public:
  static constexpr int kSlots = 256;

  // The rank: creates the file (mode 0600) with every slot free.
  static Result<std::unique_ptr<WorkerStatsFile>> create(const std::string& path);
  // A worker: maps the rank's file read-write.
  static Result<std::unique_ptr<WorkerStatsFile>> attach(const std::string& path);
  WorkerStatsFile(const WorkerStatsFile&) = delete;
  WorkerStatsFile& operator=(const WorkerStatsFile&) = delete;
  ~WorkerStatsFile();

  const std::string& path() const noexcept { return path_; }
  // The rank: a free slot for a new worker, or -1 when all are taken. Thread-safe.
  int claim() noexcept;
  // The rank: adds the slot's counters to `into`, clears it and frees it. Thread-safe.
  void release(int slot, Stats& into) noexcept;
  // The rank, at finalize: folds every slot still taken into `into` (and frees them).
  void release_all(Stats& into) noexcept;
  // The rank, any time: `rank`'s counters with every slot still taken added (the workers alive,
  // or gone but not yet released). Read under the lock release() holds, so a worker that leaves
  // meanwhile is counted once: in its slot or in `rank`, never both, never neither.
  StatsSnapshot with_live(const Stats& rank) noexcept;
  // The counters of `slot` (a worker adds to them). Null when out of range.
  Stats* slot(int index) noexcept;

 private:
  struct Slot;
  WorkerStatsFile(std::string path, Slot* slots);

  std::string path_;
  Slot* slots_ = nullptr;  // kSlots, in the shared mapping
  std::mutex mu_;          // the rank's claim and release
};

}  // namespace larder::agent

#endif  // LARDER_RUNTIME_AGENT_WORKER_STATS_HPP_
