#include "runtime/preload/real.hpp"

#include <dlfcn.h>

namespace larder::preload::real {

// NOLINTNEXTLINE(bugprone-macro-parentheses): X-macro; arguments are a type, name, (params)
#define LARDER_REAL(ret, name, params) ret(*name) params = nullptr;
#include "runtime/preload/real_symbols.def"
#undef LARDER_REAL

bool resolve_all() noexcept {
  bool all = true;
  // NOLINTBEGIN(bugprone-macro-parentheses): X-macro, as above
#define LARDER_REAL(ret, name, params)                                 \
  if (name == nullptr) {                                               \
    name = reinterpret_cast<ret(*) params>(::dlsym(RTLD_NEXT, #name)); \
    all = all && name != nullptr;                                      \
  }
  // NOLINTEND(bugprone-macro-parentheses)
#include "runtime/preload/real_symbols.def"
#undef LARDER_REAL
  g_resolved.store(true, std::memory_order_release);
  return all;
}

}  // namespace larder::preload::real
