// ScopedSeams: installs test fakes (runtime/api/seams.hpp) for the sessions started while it
// lives, and removes them after. For tests linking the static library (larder_api); defined
// apart from the Runtime's header, whose internal Session would clash with larder.hpp's.
#ifndef LARDER_TESTS_MPI_SCOPED_SEAMS_HPP_
#define LARDER_TESTS_MPI_SCOPED_SEAMS_HPP_

#include "runtime/api/seams.hpp"

namespace larder::testing {

class ScopedSeams {
 public:
  explicit ScopedSeams(Seams seams);
  ScopedSeams(const ScopedSeams&) = delete;
  ScopedSeams& operator=(const ScopedSeams&) = delete;
  ~ScopedSeams();
};

}  // namespace larder::testing

#endif  // LARDER_TESTS_MPI_SCOPED_SEAMS_HPP_
