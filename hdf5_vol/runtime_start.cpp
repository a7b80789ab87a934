#include "hdf5_vol/runtime_start.hpp"

#include <dlfcn.h>
#include <larder/larder.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>

#include "hdf5_vol/errors.hpp"

namespace larder::vol {
namespace {

struct StartState {
  std::mutex mu;
  bool started_by_us = false;  // the running session is one this connector started
  bool failed = false;         // a start failed: do not try again in this process
  bool mpi_hook = false;       // the MPI_COMM_SELF attribute is set
  bool exit_hook = false;      // the atexit handler is registered
  bool told_no_start = false;  // the "not starting" notice was printed
};

StartState& state() {
  static auto* const s = new StartState();  // never deleted: used from exit handlers
  return *s;
}

bool mpi_active() {
  int initialized = 0, finalized = 0;
  if (MPI_Initialized(&initialized) != MPI_SUCCESS || MPI_Finalized(&finalized) != MPI_SUCCESS)
    return false;
  return initialized != 0 && finalized == 0;
}

bool disabled_by_env() {
  const char* v = std::getenv("LARDER_ENABLE");
  if (v == nullptr) return false;
  const std::string_view s(v);
  return s == "0" || s == "false" || s == "no" || s == "off";
}

// Larder over more than one rank needs MPI_THREAD_MULTIPLE; the same answer on every rank.
bool thread_level_ok(MPI_Comm comm) {
  int size = 1, provided = MPI_THREAD_SINGLE;
  if (MPI_Comm_size(comm, &size) != MPI_SUCCESS || MPI_Query_thread(&provided) != MPI_SUCCESS)
    return false;
  return size == 1 || provided == MPI_THREAD_MULTIPLE;
}

bool thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  return MPI_Query_thread(&provided) == MPI_SUCCESS && provided == MPI_THREAD_MULTIPLE;
}

// Rank 0 of MPI_COMM_WORLD says it at `level`; the other ranks at info (a job of 1000 ranks
// prints one line, not 1000).
LogLevel world_rank0_level(LogLevel level) {
  int rank = 0;
  if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS) return level;
  return rank == 0 ? level : LogLevel::kInfo;
}

// liblarder_preload.so, found next to the liblarder.so this plugin uses; its bare name when it
// is not there.
std::string preload_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&larder_init), &info) != 0 && info.dli_fname != nullptr) {
    std::string dir(info.dli_fname);
    dir.resize(dir.find_last_of('/') == std::string::npos ? 0 : dir.find_last_of('/') + 1);
    std::string candidate = dir + "liblarder_preload.so";
    if (!dir.empty() && access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return "liblarder_preload.so";
}

std::string parent_directory(const char* file) {
  std::string dir(file != nullptr ? file : "");
  const auto slash = dir.find_last_of('/');
  if (slash == std::string::npos) return "<the directory of your files>";
  dir.resize(slash == 0 ? 1 : slash);
  return dir;
}

// What to add so that an MPI program's reads go through the cache (docs/hdf5-vol.md, "MPI jobs").
std::string how_to_cache(const char* file) {
  const char* preload = std::getenv("LD_PRELOAD");
  const bool preloaded = preload != nullptr &&
                         std::string_view(preload).find("liblarder_preload") != std::string::npos;
  const std::string prefix = "LARDER_PREFIX=" + parent_directory(file);
  std::string fix;
  if (preloaded) {
    fix =
        "liblarder_preload.so is in LD_PRELOAD but LARDER_PREFIX is not set, so its MPI_Init "
        "hook did not start Larder: add " +
        prefix + " (the directories of your files) to the job's environment";
  } else {
    fix = "add LD_PRELOAD=" + preload_library_path() + " and " + prefix +
          " (the directories of your files) to the job's environment: the library's MPI_Init hook "
          "asks MPI for MPI_THREAD_MULTIPLE, which Larder needs, and starts Larder on every rank";
  }
  if (thread_multiple()) {
    fix +=
        "; or, if every rank opens its files through HDF5, add start=world to HDF5_VOL_CONNECTOR "
        "(\"larder start=world;under_vol=0;under_info={}\")";
  } else {
    fix +=
        "; or initialise MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) instead of "
        "MPI_Init and add start=world to HDF5_VOL_CONNECTOR "
        "(\"larder start=world;under_vol=0;under_info={}\")";
  }
  return fix;
}

void finalize_if_ours() noexcept {
  StartState& s = state();
  std::lock_guard lock(s.mu);
  if (s.started_by_us && larder_initialized()) {
    if (larder_finalize() != LARDER_OK)
      log_line(LogLevel::kWarn, std::string("larder_finalize failed: ") + larder_last_error());
  }
  s.started_by_us = false;
}

int on_comm_self_free(MPI_Comm, int keyval, void*, void*) noexcept {
  finalize_if_ours();
  MPI_Comm_free_keyval(&keyval);
  return MPI_SUCCESS;
}

void on_exit() noexcept {
  finalize_if_ours();
}

// Our exit and MPI_Finalize hooks must outlive an H5close that unloads the plugin.
void pin_plugin() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&on_exit), &info) != 0 && info.dli_fname != nullptr)
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

// Caller holds s.mu.
bool start(StartState& s, MPI_Comm comm) {
  if (larder_init(comm) != LARDER_OK) {
    s.failed = true;
    log_line(LogLevel::kWarn,
             std::string("cannot start the cache, reads pass through: ") + larder_last_error());
    return false;
  }
  s.started_by_us = true;
  pin_plugin();
  if (comm != MPI_COMM_NULL && !s.mpi_hook) {
    int keyval = MPI_KEYVAL_INVALID;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &on_comm_self_free, &keyval, nullptr) ==
            MPI_SUCCESS &&
        MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr) == MPI_SUCCESS) {
      s.mpi_hook = true;
    }
  }
  if (comm == MPI_COMM_NULL && !s.exit_hook) s.exit_hook = std::atexit(&on_exit) == 0;
  return true;
}

// auto with an MPI-IO open: collective over `comm`; every rank returns the same decision to
// start, and no rank calls larder_init unless all of them do.
bool start_collectively(StartState& s, MPI_Comm comm) {
  const int need =
      !larder_initialized() && !s.failed && !disabled_by_env() && thread_level_ok(comm) ? 1 : 0;
  int all_need = 0;
  if (MPI_Allreduce(&need, &all_need, 1, MPI_INT, MPI_LAND, comm) != MPI_SUCCESS) return false;
  if (all_need == 0) return larder_initialized() != 0;
  return start(s, comm);
}

}  // namespace

bool ensure_runtime(larder_vol_start_t mode, MPI_Comm file_comm, const char* file) noexcept {
  try {
    StartState& s = state();
    std::lock_guard lock(s.mu);
    const bool mpi = mpi_active();
    if (mode == LARDER_VOL_START_AUTO && mpi && file_comm != MPI_COMM_NULL)
      return start_collectively(s, file_comm);  // collective even when Larder already runs here
    const int active = larder_active();
    if (active == LARDER_ACTIVE_RANK) return true;
    // A worker of a rank (a DataLoader worker): the preload library serves its reads from the
    // rank's cache, below HDF5's own driver; a cache of its own would read the PFS again.
    if (active == LARDER_ACTIVE_WORKER) return false;
    if (mode == LARDER_VOL_START_NEVER || s.failed || disabled_by_env()) return false;
    if (!mpi || mode == LARDER_VOL_START_LOCAL) return start(s, MPI_COMM_NULL);
    if (mode == LARDER_VOL_START_WORLD) {
      if (!thread_level_ok(MPI_COMM_WORLD)) {
        s.failed = true;
        log_line(world_rank0_level(LogLevel::kWarn),
                 "start=world needs MPI_THREAD_MULTIPLE, and MPI was initialised without it: HDF5 "
                 "reads pass through without the cache. To cache them, " +
                     how_to_cache(file));
        return false;
      }
      return start(s, MPI_COMM_WORLD);
    }
    if (!s.told_no_start) {
      s.told_no_start = true;
      log_line(world_rank0_level(LogLevel::kWarn),
               "Larder is not running in this MPI job and a plain open is not collective, so the "
               "connector cannot start it: HDF5 reads pass through without the cache. To cache "
               "them, " +
                   how_to_cache(file));
    }
    return false;
  } catch (...) {  // std::bad_alloc building a message
    return false;
  }
}

}  // namespace larder::vol
