// Node files (cache.hpp, Cache::node_file; docs/architecture.md, "Node files"): whole copies of
// managed files on a node, made once per node through the node table and the read path, so that
// mmap can map one copy whose pages the kernel shares between the node's processes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/cache/cache.hpp"
#include "runtime/cache/cache_resolve.hpp"
#include "runtime/chunk/chunk_math.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"

namespace larder {
namespace {

std::string node_file_name_in(const std::string& dir, const CachedFile& file) {
  char name[64];
  std::snprintf(
      name, sizeof name, "/%016llx%016llx-%016llx", static_cast<unsigned long long>(file.id.hi),
      static_cast<unsigned long long>(file.id.lo), static_cast<unsigned long long>(file.version));
  return dir + name;
}

Status write_at(int fd, std::span<const std::byte> bytes, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = sys::pwrite(fd, bytes.data() + done, bytes.size() - done,
                                  static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return from_errno(n < 0 ? errno : EIO, "cannot write a node file");
    done += static_cast<std::size_t>(n);
  }
  return {};
}

std::atomic<unsigned> g_scratch_serial{0};  // distinct scratch names within one process

}  // namespace

std::string Cache::node_file_name(const CachedFile& file) const {
  return node_files_dir_.empty() ? std::string() : node_file_name_in(node_files_dir_, file);
}

Result<std::string> Cache::node_file(const CachedFile& file) {
  if (node_files_dir_.empty() || closing()) {
    return Status(Errc::kUnavailable, 0, "node files are off");
  }
  const std::string name = node_file_name(file);
  const Key key = path_key(KeyKind::kNodeFile, name);
  Result<std::string> made = node_file_made(file, name, key);
  if (made.ok()) {
    stats_.add(Counter::node_file_maps);
  } else {
    // Why the caller does without (a private copy for mmap, the original path for the loader).
    stats_.add(made.status().code() == Errc::kNoSpace ? Counter::node_file_no_room
                                                      : Counter::node_file_failed);
  }
  return made;
}

Result<std::string> Cache::node_file_made(const CachedFile& file, const std::string& name,
                                          const Key& key) {
  Payload seen;
  if (memo_find(key, &seen)) return name;
  if (node_ == nullptr) {  // no node table: each process makes it (same bytes, atomic rename)
    if (Status s = build_node_file(file, name); !s.ok()) return s;
    memo_put(key, Payload{});
    return name;
  }
  const NodeTable::Found found = node_acquire(key, config_.wait_timeout);
  switch (found.outcome) {
    case NodeTable::Found::Outcome::kReady:
      memo_put(key, found.payload);
      return name;
    case NodeTable::Found::Outcome::kClaimed: {
      Status s = build_node_file(file, name);
      if (!s.ok()) {
        node_->fail(found.slot);  // the node's other processes do without it too
        return s;
      }
      node_->publish(found.slot, Payload{});
      memo_put(key, Payload{});
      return name;
    }
    case NodeTable::Found::Outcome::kFull:
      if (Status s = build_node_file(file, name); !s.ok()) return s;
      memo_put(key, Payload{});
      return name;
    case NodeTable::Found::Outcome::kFailed:
    case NodeTable::Found::Outcome::kTimeout:
      break;
  }
  return Status(Errc::kUnavailable, 0, "the node file of " + file.path + " could not be made");
}

Status Cache::build_node_file(const CachedFile& file, const std::string& name) {
  // Kept whole by an earlier step: that copy is the node file (its bytes count against the
  // budget already).
  if (kept_node_file(file, name)) return {};
  Arena* budget = tiers_.get(Tier::kMem);
  if (budget == nullptr) return {Errc::kUnavailable, 0, "no memory tier"};
  if (auto r = budget->reserve(file.size); !r.ok()) return r.status();
  bool used = false;
  Status s = fill_segment_node_file(file, name, &used);
  if (used) return s;
  return copy_node_file(file, name);
}

Result<Segments::Made> Cache::new_segment(std::uint64_t size, bool* servable) {
  *servable = false;
  if (segments_ == nullptr) return Status(Errc::kUnavailable, 0, "no segments");
  auto made = segments_->create(size);
  if (!made.ok()) return made.status();
  *servable = publish_segment(*made);
  return made;
}

bool Cache::publish_segment(const Segments::Made& made) {
  // Nobody on another node can read it: nothing to expose.
  if (transport_ == nullptr || nodes_ <= 1) return true;
  if (closing()) return false;
  auto desc = transport_->expose(made.id, std::span(made.file->data(), made.file->capacity()));
  if (!desc.ok()) {
    LARDER_LOG_LIMITED(kInfo, "{} cannot serve node files to other nodes ({}); they are copied",
                       transport_->name(), desc.status().to_string());
    return false;
  }
  SegmentRecord record;
  record.length = static_cast<std::uint32_t>(desc->size());
  std::memcpy(record.descriptor, desc->data(), desc->size());
  const Key key = segment_key(topology_.rank, made.id);
  count_directory_ops();
  auto claim = directory_.acquire(key, kClaimIt);
  if (!claim.ok() || claim->outcome != Claim::Outcome::kClaimed) return false;
  count_directory_ops();
  return directory_.publish(key, pack(record)).ok();
}

Status Cache::learn_segment(int owner, std::uint32_t id) {
  if (transport_ == nullptr) return {Errc::kUnavailable, 0, "no transport"};
  if (transport_->knows(owner, id)) return {};
  const Key key = segment_key(owner, id);
  const Answer a = resolve(
      key, kLookOnly, [](std::uint64_t /*ticket*/) { return Loaded{}; },
      [](const Payload& p, const Tree& /*tree*/) { return Result<Payload>(p); });
  if (a.kind != Answer::Kind::kCached) {
    return {Errc::kUnavailable, 0,
            "no record of segment " + std::to_string(id) + " of rank " + std::to_string(owner)};
  }
  const auto record = unpack<SegmentRecord>(a.payload);
  if (record.length > sizeof record.descriptor) {
    return {Errc::kInternal, EINVAL, "bad segment record"};
  }
  return transport_->learn(owner, id, std::span(record.descriptor, record.length));
}

Status Cache::fill_segment_node_file(const CachedFile& file, const std::string& name, bool* used) {
  *used = false;
  if (segments_ == nullptr || file.size == 0) return {};
  bool servable = false;
  auto seg = new_segment(file.size, &servable);
  if (!seg.ok()) {
    *used = true;  // a plain copy would not fit either
    LARDER_LOG_LIMITED(kInfo, "no node file for {}: {}", file.path, seg.status().to_string());
    return seg.status();
  }
  if (!servable) {
    segments_->drop(seg->id);  // nothing names it yet
    return {};
  }
  *used = true;
  const ChunkGeometry geometry{file.size, config_.chunk_size};
  for (std::uint64_t index = 0; index < geometry.chunk_count(); ++index) {
    ChunkRecord place;
    place.owner = topology_.rank;
    place.tier = Tier::kFile;
    place.segment = seg->id;
    place.offset = index * config_.chunk_size;
    place.length = geometry.chunk_length(index);
    place.version = file.version;
    const std::span<std::byte> dst(seg->file->data() + place.offset, place.length);
    // The chunk is loaded or copied straight into the segment when this rank is the one that
    // loads or copies it for the node; a chunk the node already held elsewhere is copied.
    auto located = locate(file, index, &place);
    bool done = false;
    FallbackCause cause = located.ok() ? located->cause : FallbackCause::kOther;
    if (located.ok() && located->source == Source::kCache) {
      const ChunkRecord& r = located->record;
      done = r.owner == place.owner && r.tier == Tier::kFile && r.segment == place.segment &&
             r.offset == place.offset;
      if (!done && copy_out(r, 0, dst, false, &cause)) {
        done = true;
        if (on_this_node(r.owner)) stats_.add(Counter::node_file_dup_bytes, place.length);
      }
    }
    if (!done) {
      stats_.fallback(file.path, cause, place.length);
      auto n = read_direct(file, place.offset, dst);
      if (!n.ok()) return n.status();
      if (*n != place.length) return {Errc::kIoError, EIO, file.path + " is shorter than cached"};
    }
  }
  // Read-only from now on (the owner's mapping keeps its access), then visible whole by its name.
  if (sys::chmod(seg->path.c_str(), 0400) != 0) {
    return from_errno(errno, "cannot publish node file " + name);
  }
  if (sys::link(seg->path.c_str(), name.c_str()) != 0 && errno != EEXIST) {
    return from_errno(errno, "cannot publish node file " + name);
  }
  stats_.add(Counter::node_files);
  stats_.add(Counter::node_file_bytes, file.size);
  return {};
}

Status Cache::copy_node_file(const CachedFile& file, const std::string& name) {
  const std::string scratch = name + ".part-" + std::to_string(::getpid()) + "-" +
                              std::to_string(g_scratch_serial.fetch_add(1));
  UniqueFd fd(sys::open(scratch.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return from_errno(errno, "cannot create node file " + scratch);
  auto discard = [&](Status s) {
    sys::unlink(scratch.c_str());
    LARDER_LOG_LIMITED(kInfo, "no node file for {}: {}", file.path, s.to_string());
    return s;
  };
  // Backed now: a full /dev/shm is an error here, never SIGBUS in a process that maps it.
  if (file.size > 0 && sys::fallocate(fd.get(), 0, 0, static_cast<off_t>(file.size)) != 0 &&
      errno != EOPNOTSUPP) {
    return discard(from_errno(errno, "cannot allocate node file " + scratch));
  }
  std::vector<std::byte> buf(std::min<std::uint64_t>(config_.chunk_size, file.size));
  for (std::uint64_t offset = 0; offset < file.size;) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), file.size - offset));
    auto n = read(file, std::span(buf).first(want), offset);
    if (!n.ok()) return discard(n.status());
    if (*n != want)
      return discard(Status(Errc::kIoError, EIO, file.path + " is shorter than cached"));
    if (Status s = write_at(fd.get(), std::span(buf).first(want), offset); !s.ok()) {
      return discard(s);
    }
    offset += want;
  }
  if (sys::fchmod(fd.get(), 0400) != 0 || sys::rename(scratch.c_str(), name.c_str()) != 0) {
    return discard(from_errno(errno, "cannot publish node file " + name));
  }
  stats_.add(Counter::node_files);
  stats_.add(Counter::node_file_bytes, file.size);
  stats_.add(Counter::node_file_dup_bytes, file.size);  // its chunks stay in the arenas
  return {};
}

}  // namespace larder
