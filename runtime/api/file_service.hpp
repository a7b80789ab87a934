// FileService: what the POSIX-shaped operations (file_ops) need from a cache. A rank's Session
// serves from its own Cache; a worker process's agent client (runtime/agent) asks its rank.
// All methods are thread-safe and follow Cache's conventions: a non-OK Result means "cannot
// answer, ask the file system yourself"; an errno of the file system is an OK answer.
#ifndef LARDER_RUNTIME_API_FILE_SERVICE_HPP_
#define LARDER_RUNTIME_API_FILE_SERVICE_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "runtime/cache/cache.hpp"
#include "runtime/cache/listing.hpp"
#include "runtime/cache/records.hpp"
#include "runtime/config/config.hpp"

namespace larder {

class FileService {
 public:
  virtual ~FileService() = default;
  virtual const Config& config() const noexcept = 0;
  virtual Result<PathRecord> lookup(const std::string& path) = 0;
  // lookup() for an open, which will read the file: a cache may fetch its first chunk's place in
  // the same round trip (Cache::lookup_for_open).
  virtual Result<PathRecord> lookup_for_open(const std::string& path) { return lookup(path); }
  virtual Result<PathRecord> lookup_link(const std::string& path) = 0;
  virtual Result<std::shared_ptr<const Listing>> list(const std::string& path) = 0;
  virtual Result<std::size_t> read(const CachedFile& file, std::span<std::byte> into,
                                   std::uint64_t offset) = 0;
  // The name of this node's whole copy of `file` (Cache::node_file), for mmap; not OK when
  // there is none (worker processes have none yet: they map a private copy).
  virtual Result<std::string> node_file(const CachedFile& /*file*/) {
    return Status(Errc::kUnavailable, 0, "no node files here");
  }

  // Produced files (LARDER_PRODUCE; Cache::claim_produced and the rest): a rank serves them from
  // its cache, a worker through its rank. Not OK with kUnavailable: the service cannot (the
  // caller writes to the PFS itself); other errors carry the errno the call gets.
  // Claims `path` for this process to produce: its canonical name.
  virtual Result<std::string> produce_claim(const std::string& /*path*/) {
    return Status(Errc::kUnavailable, 0, "no produced files here");
  }
  // Publishes `staging` (written, in produce_dir()) as `path`, claimed before.
  virtual Result<PathRecord> produce_publish(const std::string& /*path*/,
                                             const std::string& /*canonical*/,
                                             const std::string& /*staging*/,
                                             std::uint32_t /*mode*/) {
    return Status(Errc::kUnavailable, 0, "no produced files here");
  }
  // Gives a claim up (the file will not be published).
  virtual void produce_abandon(const std::string& /*path*/, const std::string& /*canonical*/) {}
  // Publishes the produced file `from` under the name `to` too (a rename into place).
  virtual Result<PathRecord> produce_alias(const std::string& /*from*/, const std::string& /*to*/) {
    return Status(Errc::kUnavailable, 0, "no produced files here");
  }
  // Where a producer writes its files until they are published (empty: nowhere).
  virtual std::string produce_dir() { return {}; }
};

}  // namespace larder

#endif  // LARDER_RUNTIME_API_FILE_SERVICE_HPP_
