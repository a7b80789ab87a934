// The node-local channel between a rank (the agent) and its worker processes (the clients).
//
// A stream Unix-domain socket in the abstract namespace, named in the environment variable
// LARDER_AGENT ("@larder-<uid>-<pid>-<random>"), so it leaves no file behind when the rank
// dies. Both ends check the other's credentials (SO_PEERCRED): the agent accepts only processes
// of its own user, a client talks only to the process whose pid the name carries.
//
// Every message is a Header followed by `length` bytes of body. The client sends one request
// and reads one reply (kStats has none). Chunk bytes normally do not cross the socket: kPlace
// answers where a chunk sits in an arena file on this node, and the client copies it from its
// own read-only mapping of that arena; only chunks held on other nodes come back inline (kRead).
#ifndef LARDER_RUNTIME_AGENT_PROTOCOL_HPP_
#define LARDER_RUNTIME_AGENT_PROTOCOL_HPP_

#include <cstdint>

#include "runtime/cache/records.hpp"
#include "runtime/chunk/chunk_key.hpp"

namespace larder::agent {

inline constexpr char kEnvName[] = "LARDER_AGENT";
// Set (to the same name) once the agent serves requests: the loader's audit module asks only then.
inline constexpr char kServingEnvName[] = "LARDER_AGENT_SERVING";
inline constexpr std::uint32_t kVersion = 9;

enum class Op : std::uint32_t {
  kHello = 1,     // body: u32 version                 -> HelloReply + worker stats file path
  kLookup = 2,    // body: u8 follow, path             -> PathRecord [+ PlaceReply of chunk 0]
  kList = 3,      // body: path                        -> ListReply + records
  kPlace = 4,     // body: FileRequest, path           -> PlaceReply
  kRead = 5,      // body: FileRequest, path           -> the bytes
  kArena = 6,     // body: ArenaRequest                -> the arena's (or segment's) file path
  kStats = 7,     // body: u64 counter deltas          (no reply; only without a stats slot)
  kNodeFile = 8,  // body: FileRequest, path         -> the node file's name (Cache::node_file)
  // The dynamic loader's audit module (runtime/audit; loader_objects.hpp):
  kLoader = 9,  // body: none            -> the loader tree's root, '\0', the prefixes joined by ':'
  kObject = 10,  // body: u32 exact, name -> ObjectReply + the name to open
  // Produced files (FileService::produce_*): strings are joined by '\0'. A reply's status is
  // an errno the caller's call gets (EROFS, EEXIST...), or kUnavailable.
  kProduceClaim = 11,    // body: path                              -> the canonical name
  kProducePublish = 12,  // body: u32 mode, path, canonical, staging -> PathRecord
  kProduceAbandon = 13,  // body: path, canonical                   -> nothing
  kProduceAlias = 14,    // body: from, to                          -> PathRecord
  kProduceDir = 15,      // body: none                              -> the files directory
  kNodeView = 16,        // body: none -> NodeViewReply + the node's ranks + the table's file
};

// Reply status: 0, an errno of the file system (kRead), or kUnavailable: the agent cannot
// answer (its runtime is gone or failed): the client asks the file system itself.
inline constexpr std::uint32_t kUnavailable = 0xffffffffu;

struct Header {
  std::uint32_t op = 0;  // requests: Op; replies: the request's op
  std::uint32_t status = 0;
  std::uint64_t length = 0;
};

struct HelloReply {
  std::int32_t rank = -1;
  std::uint32_t version = kVersion;
  std::uint64_t chunk_size = 0;
  std::int32_t stats_slot = -1;  // the worker's slot in the file named after the reply (-1: none)
  std::uint32_t reserved = 0;
};

struct FileRequest {
  FileId file;
  std::uint64_t size = 0;
  std::uint64_t version = 0;     // CachedFile::version
  std::uint64_t local_only = 0;  // CachedFile::local_only
  std::uint64_t index = 0;       // kPlace: the chunk
  std::uint64_t offset = 0;      // kRead: the byte range
  std::uint64_t length = 0;
};

struct PlaceReply {
  std::uint32_t node_local = 0;
  std::uint32_t copied = 0;  // the rank copied it from another node for this request
  ChunkRecord record;
};

// What a worker needs to map its node's table read-only (NodeView): the table's cap of entries,
// and how many ranks the node has (that many i32 ranks follow, then the table's path).
struct NodeViewReply {
  std::uint64_t max_entries = 0;
  std::uint32_t ranks = 0;
  std::uint32_t reserved = 0;
};

struct ObjectReply {
  std::uint32_t kind = 0;  // ObjectKind
  std::int32_t error = 0;  // kAbsent: the errno
};

struct ListReply {
  std::int32_t error = 0;
  std::uint64_t count = 0;
};

struct ArenaRequest {
  std::int32_t rank = -1;
  Tier tier = Tier::kMem;
  std::uint32_t segment = 0;  // tier kFile: which of the rank's segments
};

// Largest request or reply body either side accepts (a chunk is at most 1 GiB).
inline constexpr std::uint64_t kMaxBody = (1ull << 30) + 4096;

}  // namespace larder::agent

#endif  // LARDER_RUNTIME_AGENT_PROTOCOL_HPP_
