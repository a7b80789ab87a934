#include "ucx_transport/context.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "ucx_transport/ucx_status.hpp"

namespace larder::ucx {

Result<ContextPtr> create_context() {
  ucp_config_t* config = nullptr;
  if (Status s = from_ucs(ucp_config_read("LARDER", nullptr, &config), "ucp_config_read"); !s.ok())
    return s;
  // The worker is shared by the progress thread and the reading threads. UCX guards a
  // multi-threaded worker with a spinlock by default; with more threads than cores (every rank's
  // progress thread beside its readers) a waiter spins while the holder is not running. Measured
  // on 2 cores, 8 ranks (docs/benchmarks.md): 17 % of all CPU in pthread_spin_lock, and a tree's
  // cold pass 3.4-3.7 s with the spinlock against 2.1-2.5 s with a mutex. So a mutex, unless the
  // user chose (LARDER_UCX_USE_MT_MUTEX or UCX_USE_MT_MUTEX).
  if (std::getenv("LARDER_UCX_USE_MT_MUTEX") == nullptr &&
      std::getenv("UCX_USE_MT_MUTEX") == nullptr) {
    if (Status s = from_ucs(ucp_config_modify(config, "USE_MT_MUTEX", "y"), "ucp_config_modify");
        !s.ok()) {
      ucp_config_release(config);
      return s;
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  ucp_context_h context = nullptr;
  const ucs_status_t st = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (Status s = from_ucs(st, "ucp_init"); !s.ok()) return s;
  return ContextPtr(context);
}

Result<WorkerPtr> create_worker(ucp_context_h context) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_MULTI;
  ucp_worker_h worker = nullptr;
  if (Status s = from_ucs(ucp_worker_create(context, &params, &worker), "ucp_worker_create");
      !s.ok())
    return s;
  WorkerPtr owned(worker);
  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
  if (Status s = from_ucs(ucp_worker_query(worker, &attr), "ucp_worker_query"); !s.ok()) return s;
  if (attr.thread_mode != UCS_THREAD_MODE_MULTI) {
    return Status(Errc::kTransport, 0,
                  "this UCX cannot make a multi-threaded worker (built without --enable-mt)");
  }
  return owned;
}

Result<std::vector<std::byte>> worker_address(ucp_worker_h worker) {
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  if (Status s =
          from_ucs(ucp_worker_get_address(worker, &address, &length), "ucp_worker_get_address");
      !s.ok()) {
    return s;
  }
  std::vector<std::byte> out(length);
  std::memcpy(out.data(), address, length);
  ucp_worker_release_address(worker, address);
  return out;
}

Result<bool> has_hardware_rma(ucp_context_h context) {
  char* text = nullptr;
  std::size_t length = 0;
  std::FILE* stream = ::open_memstream(&text, &length);
  if (stream == nullptr) return from_errno(errno, "open_memstream");
  ucp_context_print_info(context, stream);
  if (std::fclose(stream) != 0) {
    std::free(text);
    return from_errno(errno, "open_memstream");
  }
  std::istringstream lines(std::string(text, length));
  std::free(text);
  // "#      resource 1  :  md 1  dev 1  flags -- tcp/lo"
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("resource") == std::string::npos) continue;
    const std::size_t dashes = line.find("-- ");
    if (dashes == std::string::npos) continue;
    const std::string tl = line.substr(dashes + 3, line.find('/', dashes) - dashes - 3);
    for (const char* hw : {"rc", "dc", "ugni", "gga"}) {
      if (tl.rfind(hw, 0) == 0) return true;
    }
  }
  return false;
}

Result<AmHandler> AmHandler::set(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t callback,
                                 void* arg) {
  ucp_am_handler_param_t param{};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                     UCP_AM_HANDLER_PARAM_FIELD_ARG;
  param.id = id;
  param.cb = callback;
  param.arg = arg;
  if (Status s = from_ucs(ucp_worker_set_am_recv_handler(worker, &param),
                          "ucp_worker_set_am_recv_handler");
      !s.ok()) {
    return s;
  }
  AmHandler h;
  h.worker_ = worker;
  h.id_ = id;
  return h;
}

AmHandler& AmHandler::operator=(AmHandler&& other) noexcept {
  if (this != &other) {
    unset();
    worker_ = other.worker_;
    id_ = other.id_;
    other.worker_ = nullptr;
  }
  return *this;
}

void AmHandler::unset() noexcept {
  if (worker_ == nullptr) return;
  ucp_am_handler_param_t param{};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
  param.id = id_;
  param.cb = nullptr;
  (void)ucp_worker_set_am_recv_handler(worker_, &param);
  worker_ = nullptr;
}

}  // namespace larder::ucx
