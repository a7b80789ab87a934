// Seams: where tests put in-process fakes in front of a session's real parts, to inject the
// faults a real job meets (a PFS that stalls or fails, a directory that errs, a transport whose
// peer is gone). The Runtime holds them (Runtime::set_seams_for_testing); they are empty unless
// a test set them, and only programs linking the static library (larder_api) can: the shared
// libraries export none of it. docs/reliability.md lists the faults the suites inject.
#ifndef LARDER_RUNTIME_API_SEAMS_HPP_
#define LARDER_RUNTIME_API_SEAMS_HPP_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "runtime/directory/directory.hpp"
#include "runtime/pfs/file_system.hpp"
#include "runtime/transport/transport.hpp"

namespace larder {

struct Seams {
  // Each takes the real part and returns what the session uses in its place (which may forward
  // to the real one, which outlives it).
  std::function<std::unique_ptr<FileSystem>(std::unique_ptr<FileSystem> real)> file_system;
  std::function<std::unique_ptr<Directory>(Directory& real)> directory;
  std::function<std::unique_ptr<Transport>(Transport& real)> transport;
  // This rank's UCX endpoint to that rank is connected to a worker that no longer exists (the
  // peer's process died): every operation on it fails.
  int ucx_dead_peer = -1;
  // The cache's wall clock in seconds (the age of answers, LARDER_REVALIDATE): tests move it
  // instead of waiting.
  std::function<std::int64_t()> clock;
  // Whether the pages of these bytes are in memory (a disk-tier chunk is checked when they are
  // not): tests answer "no" to have the disk tier read as if from the device.
  std::function<bool(std::span<const std::byte>)> resident;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_API_SEAMS_HPP_
