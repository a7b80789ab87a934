#include "ucx_transport/memory_hooks.hpp"

#include <ucm/api/ucm.h>

namespace larder::ucx {
namespace {

void ignore_event(ucm_event_type_t, ucm_event_t*, void*) {}

}  // namespace

bool install_memory_hooks_now() noexcept {
  constexpr int kEvents = UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED;
  // The lowest priority: the handler exists only for the moment it takes to install the hooks.
  if (ucm_set_event_handler(kEvents, 1000, ignore_event, nullptr) != UCS_OK) return false;
  ucm_unset_event_handler(kEvents, ignore_event, nullptr);
  return true;
}

}  // namespace larder::ucx
