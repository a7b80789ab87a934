#include "tests/mpi/scoped_seams.hpp"

#include "runtime/api/runtime.hpp"

namespace larder::testing {

ScopedSeams::ScopedSeams(Seams seams) {
  Runtime::instance().set_seams_for_testing(std::move(seams));
}

ScopedSeams::~ScopedSeams() {
  Runtime::instance().set_seams_for_testing(Seams{});
}

}  // namespace larder::testing
