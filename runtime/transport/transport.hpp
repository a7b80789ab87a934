// Transport: how a rank copies bytes out of another node's arenas and segments (cross-node hits).
//
// Implemented by mpi::RmaTransport (MPI_Get from windows over the arenas, and a dynamic window
// over the segments) and ucx::UcxTransport (ucp_get_nbx from registered memory). Thread-safe;
// blocking until the bytes have arrived or the transfer failed. A failure is a Status, never an
// abort: the caller reads the PFS instead.
//
// Segments (runtime/tier/segments.hpp) are files a rank creates during the job (node files,
// produced files). The owner exposes each one (expose(): registered with the network, and a
// descriptor of a few bytes that says how to reach it); the cache publishes the descriptor in the
// directory, and a reader hands it to learn() once before its first get from that segment.
#ifndef LARDER_RUNTIME_TRANSPORT_TRANSPORT_HPP_
#define LARDER_RUNTIME_TRANSPORT_TRANSPORT_HPP_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/tier/arena.hpp"
#include "runtime/tier/segments.hpp"

namespace larder {

// Remote reads are made in pieces, so that the reader copies and hashes piece k while piece k + 1
// is in flight (the same pieces whether or not the hash is wanted, Transport::GetOp::hashed):
// about 8 pieces a read, each of 256 KiB to 1 MiB (a read of at most 256 KiB is one piece). The
// last piece's hash is what is not hidden: an eighth of a read's hash. Smaller pieces cost a
// message or a request each (UCX active messages reach 2.0 GB/s at 64 KiB and 4.5 GB/s at 1 MiB on
// this machine's loopback: docs/protocol.md, "Remote reads as messages").
constexpr std::uint64_t kMinPiece = std::uint64_t{256} << 10;
constexpr std::uint64_t kMaxPiece = std::uint64_t{1} << 20;
constexpr std::uint64_t piece_of(std::uint64_t read) noexcept {
  const std::uint64_t eighth = (read / 8 + 4095) / 4096 * 4096;
  return eighth < kMinPiece ? kMinPiece : eighth > kMaxPiece ? kMaxPiece : eighth;
}

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const noexcept = 0;

  // The content hash of a get's bytes, computed by the transport as they arrived.
  struct Hashed {
    std::uint64_t hash = 0;  // content_hash(into); 0: the transport did not hash them
    std::uint64_t ns = 0;    // time spent hashing
  };
  // The chunk a get's bytes belong to, as its record says (length 0: not a chunk, or unknown):
  // a holder about to serve them from its disk tier, with pages the kernel must read from the
  // device, checks the whole chunk against `hash` first (set_serve_check).
  struct ChunkOf {
    std::uint64_t offset = 0;  // in the holder's arena or segment
    std::uint64_t length = 0;
    std::uint64_t hash = 0;
  };
  // One copy: into.size() bytes at `offset` of rank `owner`'s arena `tier` (or, for tier kFile,
  // of its segment `segment`). With `hashed`, the caller wants the bytes' hash. A transport that
  // receives them in pieces hashes each piece while the next ones are in flight and fills it in;
  // one that does not leaves it 0, and the caller hashes `into` itself.
  struct GetOp {
    int owner = -1;
    Tier tier = Tier::kMem;
    std::uint32_t segment = 0;
    std::uint64_t offset = 0;
    std::span<std::byte> into;
    Hashed* hashed = nullptr;
    ChunkOf chunk;
  };
  virtual Status get(const GetOp& op) = 0;
  // Many gets at once (from any owners): out[i] is the outcome of ops[i]. Transports that can
  // overlap them do (UCX: every get is issued, then all are waited for).
  virtual void get_many(std::span<const GetOp> ops, std::span<Status> out) {
    for (std::size_t i = 0; i < ops.size(); ++i) out[i] = get(ops[i]);
  }

  // Makes this rank's segment `segment` (`memory`, which stays mapped until close) readable by
  // other ranks; returns its descriptor (at most kMaxSegmentDescriptor bytes). kUnsupported
  // when this transport cannot serve segments: their chunks are then copied into an arena.
  static constexpr std::size_t kMaxSegmentDescriptor = 96;
  virtual Result<std::vector<std::byte>> expose(std::uint32_t /*segment*/,
                                                std::span<std::byte> /*memory*/) {
    return Status(Errc::kUnavailable, 0, "this transport does not serve segments");
  }
  // Whether gets from rank `owner`'s segment `segment` can be issued (learn() has succeeded).
  virtual bool knows(int /*owner*/, std::uint32_t /*segment*/) { return false; }
  // Takes the descriptor another rank's expose() returned for its segment `segment`.
  virtual Status learn(int /*owner*/, std::uint32_t /*segment*/,
                       std::span<const std::byte> /*descriptor*/) {
    return {Errc::kUnavailable, 0, "this transport does not serve segments"};
  }

  // Finalize has begun on this rank: peers closing their side from now on is the job ending in
  // order, not a failure to report.
  virtual void begin_close() noexcept {}

  // What a holder runs before it serves a piece of a chunk of its own (the chunk named by the
  // reader's GetOp::chunk, in its arena `tier` or segment `segment`): false when the chunk's bytes
  // do not match `hash`, and the piece is then refused with EBADMSG. Called on the thread that
  // serves the read (remote reads as messages), or that answers the reader's question before a
  // one-sided get of a disk-tier chunk (HolderChecks). Set once, after the cache is made; it
  // lives until close().
  using ServeCheck = std::function<bool(Tier tier, std::uint32_t segment, const ChunkOf& chunk)>;
  virtual void set_serve_check(const ServeCheck& /*check*/) {}
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TRANSPORT_TRANSPORT_HPP_
