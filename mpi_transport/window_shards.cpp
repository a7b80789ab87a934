#include "mpi_transport/window_shards.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mpi_transport/mpi_status.hpp"
#include "runtime/common/log.hpp"

namespace larder::mpi {
namespace {

// The targets a thread has operations to and has not flushed yet, per WindowShards (a thread
// flushes its own operations: ShardOps). Reached through a trivially destructible thread_local
// and freed at thread exit by a pthread key, as in ucx_shards.cpp: a thread_local with a
// destructor registers it on first use under the dynamic loader's lock, and the agent's loader
// thread (runtime/agent) must run while a dlopen in another thread holds that lock.
struct Touched {
  const WindowShards* owner = nullptr;
  std::vector<std::uint8_t> flagged;  // one per rank
  std::vector<int> targets;           // the flagged ranks, in the order first touched
};
using TouchedList = std::vector<Touched>;

pthread_key_t touched_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k{};
    if (pthread_key_create(&k, [](void* p) { delete static_cast<TouchedList*>(p); }) != 0) {
      LARDER_LOG_WARN("no thread-exit cleanup of MPI directory targets (pthread_key_create)");
      return static_cast<pthread_key_t>(-1);
    }
    return k;
  }();
  return key;
}

thread_local TouchedList* t_touched = nullptr;

// This thread's entry for `owner` (a window of `size` ranks).
Touched& touched(const WindowShards* owner, int size) {
  if (t_touched == nullptr) {
    t_touched = new TouchedList();
    const pthread_key_t key = touched_key();
    if (key != static_cast<pthread_key_t>(-1)) pthread_setspecific(key, t_touched);
  }
  auto it = std::find_if(t_touched->begin(), t_touched->end(),
                         [owner](const Touched& t) { return t.owner == owner; });
  if (it == t_touched->end()) {
    t_touched->push_back(Touched{owner, {}, {}});
    it = t_touched->end() - 1;
  }
  if (it->flagged.size() != static_cast<std::size_t>(size)) {
    // First use, or a new window at the address of a closed one.
    it->flagged.assign(static_cast<std::size_t>(size), 0);
    it->targets.clear();
  }
  return *it;
}

}  // namespace

void WindowShards::touch(int target) {
  Touched& t = touched(this, size_);
  if (target < 0 || target >= size_) return;  // MPI refuses the operation itself
  auto& flag = t.flagged[static_cast<std::size_t>(target)];
  if (flag == 0) {
    flag = 1;
    t.targets.push_back(target);
  }
}

Result<std::unique_ptr<WindowShards>> WindowShards::create(MPI_Comm comm, std::size_t bytes) {
  auto window = Window::allocate(comm, bytes);
  if (!window.ok()) return window.status();
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return std::unique_ptr<WindowShards>(new WindowShards(std::move(*window), rank, size));
}

Status WindowShards::compare_and_swap(int target, std::uint64_t disp, const std::uint64_t* desired,
                                      const std::uint64_t* expected, std::uint64_t* old) {
  touch(target);
  return from_mpi(MPI_Compare_and_swap(desired, expected, old, MPI_UINT64_T, target,
                                       static_cast<MPI_Aint>(disp), window_.get()),
                  "MPI_Compare_and_swap");
}

Status WindowShards::fetch_add(int target, std::uint64_t disp, const std::uint64_t* add,
                               std::uint64_t* old) {
  touch(target);
  return from_mpi(MPI_Fetch_and_op(add, old, MPI_UINT64_T, target, static_cast<MPI_Aint>(disp),
                                   MPI_SUM, window_.get()),
                  "MPI_Fetch_and_op");
}

Status WindowShards::store(int target, std::uint64_t disp, const std::uint64_t* value) {
  touch(target);
  return from_mpi(MPI_Accumulate(value, 1, MPI_UINT64_T, target, static_cast<MPI_Aint>(disp), 1,
                                 MPI_UINT64_T, MPI_REPLACE, window_.get()),
                  "MPI_Accumulate");
}

Status WindowShards::get(int target, std::uint64_t disp, void* into, std::size_t bytes) {
  touch(target);
  return from_mpi(
      MPI_Get(into, static_cast<int>(bytes), MPI_BYTE, target, static_cast<MPI_Aint>(disp),
              static_cast<int>(bytes), MPI_BYTE, window_.get()),
      "MPI_Get");
}

Status WindowShards::put(int target, std::uint64_t disp, const void* from, std::size_t bytes) {
  touch(target);
  return from_mpi(
      MPI_Put(from, static_cast<int>(bytes), MPI_BYTE, target, static_cast<MPI_Aint>(disp),
              static_cast<int>(bytes), MPI_BYTE, window_.get()),
      "MPI_Put");
}

Status WindowShards::flush(int target) {
  Touched& t = touched(this, size_);
  if (target >= 0 && target < size_ && t.flagged[static_cast<std::size_t>(target)] != 0) {
    t.flagged[static_cast<std::size_t>(target)] = 0;
    t.targets.erase(std::find(t.targets.begin(), t.targets.end(), target));
  }
  return from_mpi(MPI_Win_flush(target, window_.get()), "MPI_Win_flush");
}

Status WindowShards::flush_all() {
  // One MPI_Win_flush per target, not MPI_Win_flush_all (see the header). Every target is
  // flushed even after one failed, so that no operation is left behind.
  Touched& t = touched(this, size_);
  Status first;
  for (int target : t.targets) {
    t.flagged[static_cast<std::size_t>(target)] = 0;
    Status s = from_mpi(MPI_Win_flush(target, window_.get()), "MPI_Win_flush");
    if (first.ok() && !s.ok()) first = std::move(s);
  }
  t.targets.clear();
  return first;
}

Status WindowShards::close() {
  return window_.close();
}

}  // namespace larder::mpi
