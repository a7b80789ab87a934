// Produced files (cache.hpp; docs/user-guide.md, "Producing files"; docs/protocol.md, "Produced
// files"): a file written under LARDER_PRODUCE is kept on its producer's node as a segment and
// published whole when its producer closes it; readers anywhere in the job wait for it (without
// polling) and then read it through the usual read path.
//
//   claim      the producer claims the path's directory entry when it opens the file for writing:
//              a second producer finds it LOADING (EEXIST), a writer of a published file finds
//              it READY (EROFS).
//   publish    at the last close: written to the PFS first in `through` mode (a temporary name,
//              then rename: the PFS never shows part of it), adopted as a segment, its chunks
//              published at once (one round trip for the claims, one for the publications), then
//              its stat answer, whose home tells every rank watching the path.
//   lookup     a reader finds the answer READY, or LOADING (it registers with the producer), or
//              nobody's (it registers with the path's home, Directory::watch): one message each
//              way per waiting node, up to LARDER_TIMEOUT, then the PFS's answer.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/cache/cache.hpp"
#include "runtime/cache/cache_resolve.hpp"
#include "runtime/cache/fanout.hpp"
#include "runtime/chunk/chunk_math.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/path/path.hpp"
#include "runtime/pfs/file_copy.hpp"

namespace larder {
namespace {

Status io_error(int err, const std::string& what) {
  return {Errc::kIoError, err, what + ": " + std::strerror(err)};
}

}  // namespace

Result<std::string> Cache::produced_canonical(const std::string& path) {
  auto parent = pfs_.resolve(parent_of(path));
  if (!parent.ok()) {
    const int err = parent.status().native_code() != 0 ? parent.status().native_code() : EIO;
    return io_error(err, "cannot produce " + path);
  }
  if (!parent->meta.is_directory()) return io_error(ENOTDIR, "cannot produce " + path);
  return path::absolute_from(parent->canonical, name_of(path));
}

std::vector<Key> Cache::produced_keys(const std::string& path, const std::string& canonical) {
  std::vector<Key> keys{path_key(KeyKind::kPath, path)};
  if (canonical != path) keys.push_back(path_key(KeyKind::kPath, canonical));
  return keys;
}

Result<std::string> Cache::claim_produced(const std::string& path) {
  if (closing()) return Status(Errc::kUnavailable, 0, "the job is ending");
  auto canonical = produced_canonical(path);
  if (!canonical.ok()) return canonical.status();
  const std::vector<Key> keys = produced_keys(path, *canonical);
  std::vector<Lookup> lookups;
  lookups.reserve(keys.size());
  for (const Key& k : keys) lookups.push_back(Lookup{k, kClaimIt});
  std::vector<Result<Claim>> claims(keys.size(), Status());
  stats_.add(Counter::directory_ops, keys.size());
  directory_.acquire_many(lookups, claims);
  int err = 0;
  Status unavailable;
  for (const auto& c : claims) {
    if (!c.ok()) {
      unavailable = c.status();
    } else if (c->outcome == Claim::Outcome::kReady) {
      err = EROFS;  // published: produced files are written once
    } else if (c->outcome != Claim::Outcome::kClaimed) {
      err = err == 0 ? EEXIST : err;  // another process produces it (or gave it up)
    }
  }
  if (err == 0 && unavailable.ok()) return canonical;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (claims[i].ok() && claims[i]->outcome == Claim::Outcome::kClaimed) {
      (void)directory_.abandon_watched(keys[i]);
    }
  }
  stats_.add(Counter::produce_refused);
  if (err != 0) {
    return io_error(err, path + (err == EROFS ? " is published (produced files are written once)"
                                              : " is being produced by another process"));
  }
  return unavailable;
}

void Cache::abandon_produced(const std::string& path, const std::string& canonical) {
  if (closing()) return;
  for (const Key& k : produced_keys(path, canonical)) (void)directory_.abandon_watched(k);
}

Result<PathRecord> Cache::publish_produced(const std::string& path, const std::string& canonical,
                                           const std::string& staging, std::uint32_t mode) {
  const bool local = config_.produce_mode == ProduceMode::kLocal;
  auto give_up = [&](Status s) -> Result<PathRecord> {
    abandon_produced(path, canonical);
    LARDER_LOG_LIMITED(kWarn, "{} could not be published: {}", path, s.to_string());
    return s;
  };
  if (closing()) return give_up(Status(Errc::kUnavailable, 0, "the job is ending"));
  struct stat st {};
  if (sys::stat(staging.c_str(), &st) != 0)
    return give_up(io_error(errno, "cannot stat " + staging));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  PathRecord record;
  record.flags =
      PathRecord::kManaged | PathRecord::kProduced | (local ? PathRecord::kLocalOnly : 0);
  record.file = file_id_of(canonical);
  record.checked_s = now_s();
  if (local) {
    record.meta = FileMeta::from_stat(st);
    record.meta.mode = S_IFREG | (mode & 07777);
    record.meta.ino = record.file.lo != 0 ? record.file.lo : 1;  // the same on every node
    record.meta.dev = 0;
    record.meta.nlink = 1;
  } else if (Status s = copy_file_atomically(staging, path, mode, &record.meta); !s.ok()) {
    return give_up(s);
  } else {
    stats_.add(Counter::produce_pfs_bytes, size);
  }
  const std::uint64_t version = record.version();

  // Kept on the node: the file becomes a segment, its chunks are published there.
  Arena* budget = tiers_.get(Tier::kMem);
  const bool fits = budget != nullptr && budget->reserve(size).ok();
  if (!fits && !local) {
    // No room: readers load it from the PFS, where it now is.
    sys::unlink(staging.c_str());
    LARDER_LOG_LIMITED(kInfo, "{} is not kept on its node (LARDER_MEM is used up)", path);
  } else if (segments_ == nullptr) {
    return give_up(Status(Errc::kUnavailable, 0, "no files directory on this node"));
  } else {
    if (!fits) {
      LARDER_LOG_LIMITED(kWarn,
                         "produced files exceed LARDER_MEM on this node; {} is kept (local mode "
                         "has no other copy)",
                         path);
    }
    auto seg = segments_->adopt(staging);
    if (!seg.ok()) return give_up(seg.status());
    if (!publish_segment(*seg) && !local) {
      LARDER_LOG_LIMITED(kInfo, "{} is served to other nodes from the PFS", path);
    }
    publish_produced_chunks(record.file, size, version, *seg);
    produced_node_file(CachedFile{path, record.file, size, version, local}, *seg);
  }

  // The stat answer last: whoever sees it finds every chunk published.
  std::vector<Directory::Final> finals;
  for (const Key& k : produced_keys(path, canonical)) {
    finals.push_back(Directory::Final{k, pack(record), true, true});
    memo_put(k, pack(record));
  }
  std::vector<Status> out(finals.size());
  stats_.add(Counter::directory_ops, finals.size());
  directory_.finish_many(finals, out);
  for (const Status& s : out) {
    if (!s.ok()) LARDER_LOG_LIMITED(kWarn, "cannot publish {}: {}", path, s.to_string());
  }
  if (local && kept_place_ != nullptr) {
    // The PFS has no copy: its answer is kept with its chunks, for the allocation's later steps.
    KeptProduced kept{path, canonical, std::vector<std::byte>(sizeof(PathRecord))};
    std::memcpy(kept.answer.data(), &record, sizeof(PathRecord));
    std::lock_guard lock(kept_mu_);
    produced_.push_back(std::move(kept));
  }
  stats_.add(Counter::produce_files);
  stats_.add(Counter::produce_bytes, size);
  return record;
}

Result<PathRecord> Cache::alias_produced(const std::string& from, const std::string& to) {
  auto record = lookup_produced(from);
  if (!record.ok()) return record.status();
  if (record->error != 0) return io_error(record->error, "cannot rename " + from);
  if (!record->produced()) return Status(Errc::kInvalidArgument, 0, from + " is not produced");
  auto canonical = claim_produced(to);
  if (!canonical.ok()) return canonical.status();
  if (!record->local_only() && sys::rename(from.c_str(), to.c_str()) != 0) {
    const int err = errno;
    abandon_produced(to, *canonical);
    return io_error(err, "cannot rename " + from + " to " + to);
  }
  std::vector<Directory::Final> finals;
  for (const Key& k : produced_keys(to, *canonical)) {
    finals.push_back(Directory::Final{k, pack(*record), true, true});
    memo_put(k, pack(*record));
  }
  std::vector<Status> out(finals.size());
  stats_.add(Counter::directory_ops, finals.size());
  directory_.finish_many(finals, out);
  return record;
}

void Cache::publish_produced_chunks(const FileId& file, std::uint64_t size, std::uint64_t version,
                                    const Segments::Made& seg) {
  const ChunkGeometry geometry{size, config_.chunk_size};
  std::vector<Lookup> lookups;
  for (std::uint64_t i = 0; i < geometry.chunk_count(); ++i) {
    lookups.push_back(Lookup{chunk_key(file, i), kClaimIt});
  }
  if (lookups.empty()) return;
  std::vector<Result<Claim>> claims(lookups.size(), Status());
  stats_.add(Counter::directory_ops, lookups.size());
  directory_.acquire_many(lookups, claims);
  std::vector<Directory::Final> finals;
  for (std::uint64_t i = 0; i < lookups.size(); ++i) {
    if (!claims[i].ok() || claims[i]->outcome != Claim::Outcome::kClaimed) continue;
    ChunkRecord record;
    record.owner = topology_.rank;
    record.tier = Tier::kFile;
    record.segment = seg.id;
    record.offset = i * config_.chunk_size;
    record.length = geometry.chunk_length(i);
    record.position = fanout::kNoTicket;  // every ticket is a reader's
    record.version = version;
    record.hash =
        hash_of(std::span<const std::byte>(seg.file->data() + record.offset, record.length));
    finals.push_back(Directory::Final{lookups[i].key, pack(record), true, false});
    memo_put(lookups[i].key, pack(record));
    publish_on_node(lookups[i].key, pack(record));
    record_placed(lookups[i].key, record,
                  KeptRecord::kOrigin);  // kept for later steps (LARDER_KEEP)
  }
  std::vector<Status> out(finals.size());
  stats_.add(Counter::directory_ops, finals.size());
  directory_.finish_many(finals, out);
  stats_.add(Counter::cached_chunks, finals.size());
  stats_.add(Counter::cached_bytes, size);
}

void Cache::publish_on_node(const Key& key, const Payload& payload) {
  // The node's ranks and workers find the producer's chunks in their node table; in a job of one
  // node they look nowhere else (resolve_on_node, cache_resolve.hpp).
  if (node_ == nullptr || closing()) return;
  const NodeTable::Found found = node_->acquire(key, std::chrono::milliseconds(0));
  if (found.outcome == NodeTable::Found::Outcome::kClaimed) node_->publish(found.slot, payload);
}

void Cache::produced_node_file(const CachedFile& file, const Segments::Made& seg) {
  // The node file of a produced file is its segment: mmap on this node maps it, no copy.
  const std::string name = node_file_name(file);
  if (name.empty()) return;
  (void)sys::chmod(seg.path.c_str(), 0400);  // the owner's mapping keeps its access
  if (sys::link(seg.path.c_str(), name.c_str()) != 0 && errno != EEXIST) return;
  const Key key = path_key(KeyKind::kNodeFile, name);
  if (node_ != nullptr) {
    const NodeTable::Found found = node_->acquire(key, std::chrono::milliseconds(0));
    if (found.outcome == NodeTable::Found::Outcome::kClaimed) node_->publish(found.slot, {});
  }
  memo_put(key, Payload{});
  stats_.add(Counter::node_files);
  stats_.add(Counter::node_file_bytes, file.size);
}

Result<PathRecord> Cache::lookup_produced(const std::string& path) {
  const Key key = path_key(KeyKind::kPath, path);
  Payload payload;
  if (memo_find(key, &payload)) {
    stats_.add(Counter::meta_hits);
    return unpack<PathRecord>(payload);
  }
  if (closing()) return Status(Errc::kUnavailable, 0, "the job is ending");
  NodeTable::Found found;
  bool resolver = false;
  if (node_ != nullptr) {
    found = node_acquire(key, config_.wait_timeout);
    switch (found.outcome) {
      case NodeTable::Found::Outcome::kReady:
        stats_.add(Counter::node_answers);
        stats_.add(Counter::meta_hits);
        memo_put(key, found.payload);
        return unpack<PathRecord>(found.payload);
      case NodeTable::Found::Outcome::kClaimed:
        resolver = true;  // this rank waits for the node; the others sleep on the entry
        break;
      case NodeTable::Found::Outcome::kTimeout:
        return Status(Errc::kTimeout, ETIMEDOUT, "the node's resolver of " + path + " timed out");
      case NodeTable::Found::Outcome::kFailed:
      case NodeTable::Found::Outcome::kFull:
        break;
    }
  }
  const Answer a = resolve_produced(key, path);
  if (resolver) {
    if (a.kind == Answer::Kind::kCached) {
      node_->publish(found.slot, a.payload);
    } else {
      node_->fail(found.slot);  // the node's other ranks ask themselves
    }
  }
  if (a.kind != Answer::Kind::kCached) {
    return Status(Errc::kUnavailable, 0, "no producer published " + path);
  }
  stats_.add(Counter::meta_misses);
  memo_put(key, a.payload);
  return unpack<PathRecord>(a.payload);
}

Cache::Answer Cache::resolve_produced(const Key& key, const std::string& path) {
  if (progress_ != nullptr) progress_->notify_activity();
  stats_.add(Counter::directory_ops);
  auto now = directory_.acquire(key, kLookOnly);
  if (now.ok() && now->outcome == Claim::Outcome::kReady) {
    return Answer{Answer::Kind::kCached, now->payload};
  }
  if (!now.ok() || now->outcome == Claim::Outcome::kFailed) return Answer{};  // the PFS's answer
  if (now->outcome == Claim::Outcome::kAbsent) {
    // What the PFS has there now: a directory is its answer (directories are not produced, and
    // remembered on the node only); anything else, nothing yet or a file of an earlier job,
    // waits for this job's producer.
    Loaded pfs = load_path(path, false);
    const auto record = unpack<PathRecord>(pfs.answer.payload);
    if (pfs.answer.kind != Answer::Kind::kError && record.error == 0 &&
        record.meta.is_directory()) {
      return Answer{Answer::Kind::kCached, pfs.answer.payload};
    }
  }
  // Claimed by its producer (registered with it) or nobody's yet (registered with its home).
  stats_.add(Counter::produce_waits);
  const auto start = std::chrono::steady_clock::now();
  auto final = now->outcome == Claim::Outcome::kLoading && now->claimer >= 0
                   ? directory_.wait(key, *now, config_.wait_timeout)
                   : directory_.watch(key, config_.wait_timeout);
  stats_.add(Counter::produce_wait_ns,
             static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now() - start)
                                            .count()));
  if (final.ok() && final->outcome == Claim::Outcome::kReady) {
    return Answer{Answer::Kind::kCached, final->payload};
  }
  if (!final.ok()) {
    LARDER_LOG_LIMITED(kWarn,
                       "nobody published {} within LARDER_TIMEOUT ({}); using the file system's "
                       "answer",
                       path, final.status().to_string());
  }
  return Answer{};  // the PFS's answer, asked by the caller
}

}  // namespace larder
