// Kept stores (runtime/tier/kept_store.hpp; docs/architecture.md, "Kept stores"): chunks an
// earlier job step of the allocation left on this node, adopted in place by the rank that
// resolves them for the node, after their file version and content hash are checked; kept files
// this step does not use, evicted when the step needs their room (to the disk tier when it has
// room); and, at the step's end, what
// this rank placed in its arenas and segments, kept for the next step.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

#include "runtime/cache/cache.hpp"
#include "runtime/cache/cache_resolve.hpp"
#include "runtime/chunk/chunk_math.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"

namespace larder {

namespace {

// A kept file's entry in the node table (KeyKind::kKeptFile): adopted by `owner` as its segment
// `segment`, or evicted (or unusable) for the rest of the step.
struct KeptFilePlace {
  enum State : std::uint32_t { kAdopted = 1, kEvicted = 2, kUnusable = 3 };
  std::int32_t owner = -1;
  std::uint32_t segment = 0;
  std::uint32_t state = kUnusable;
};

Key kept_file_key(const std::string& path) {
  return path_key(KeyKind::kKeptFile, path);
}

// The file's second node-table entry: whether a rank of this node read a chunk from it in this
// step (then it stays), or it was evicted first (then nobody on the node reads it any more).
Key kept_use_key(const std::string& path) {
  return path_key(KeyKind::kKeptFile, "use:" + path);
}

enum class Use : std::uint32_t { kUsed = 1, kEvicted = 2 };

}  // namespace

// The node's answer for kept file `n`: claimed by this rank (which then adopts or evicts it, as
// `adopt` says), or what another rank of the node made of it. Without a node table (one
// process), this process's own map.
Result<std::pair<int, std::uint32_t>> Cache::kept_file(std::uint32_t n, bool adopt,
                                                       bool* evicted_here) {
  const KeptStore::File& file = kept_->file(n);
  const Key key = kept_file_key(file.path);
  auto decide = [&]() -> KeptFilePlace {
    KeptFilePlace place;
    if (!adopt) {
      if (evicted_here != nullptr) *evicted_here = true;
      place.state = KeptFilePlace::kEvicted;
      leave_tier(file);
      return place;
    }
    if (segments_ == nullptr) return place;
    auto made = segments_->link_kept(file.path, file.disk, n);
    if (!made.ok()) {
      LARDER_LOG_LIMITED(kWarn, "kept file {} cannot be used: {}", file.path,
                         made.status().to_string());
      return place;
    }
    if (!publish_segment(*made)) {
      segments_->drop(made->id);
      return place;
    }
    stats_.add(Counter::kept_files_adopted);
    place.owner = topology_.rank;
    place.segment = made->id;
    place.state = KeptFilePlace::kAdopted;
    return place;
  };
  KeptFilePlace place;
  if (node_ != nullptr) {
    NodeTable::Found found = node_->acquire(key, config_.wait_timeout);
    if (found.outcome == NodeTable::Found::Outcome::kClaimed) {
      place = decide();
      node_->publish(found.slot, pack(place));
    } else if (found.outcome == NodeTable::Found::Outcome::kReady) {
      place = unpack<KeptFilePlace>(found.payload);
    } else {
      return Status(Errc::kUnavailable, 0, "the node table has no answer for a kept file");
    }
  } else {
    std::lock_guard lock(kept_mu_);
    auto it = kept_local_.find(n);
    if (it == kept_local_.end()) it = kept_local_.emplace(n, pack(decide())).first;
    place = unpack<KeptFilePlace>(it->second);
  }
  if (place.state != KeptFilePlace::kAdopted) {
    return Status(Errc::kUnavailable, 0, "kept file evicted or unusable");
  }
  return std::pair{static_cast<int>(place.owner), place.segment};
}

// Decides kept file `n`'s use on this node once: the first to ask sets it (`want`); returns what
// was decided, and in `decided_here` whether this call decided it (an eviction is made once, by
// the rank that decided it). Without a node table, this process decides alone.
bool Cache::kept_use(std::uint32_t n, bool use, bool* decided_here) {
  const auto want = static_cast<std::uint32_t>(use ? Use::kUsed : Use::kEvicted);
  std::uint32_t got = want;
  bool here = false;
  if (node_ != nullptr) {
    NodeTable::Found found =
        node_->acquire(kept_use_key(kept_->file(n).path), config_.wait_timeout);
    if (found.outcome == NodeTable::Found::Outcome::kClaimed) {
      node_->publish(found.slot, pack(want));
      here = true;
    } else if (found.outcome == NodeTable::Found::Outcome::kReady) {
      got = unpack<std::uint32_t>(found.payload);
    } else {
      return false;  // no answer: neither use nor evict it
    }
  } else {
    std::lock_guard lock(kept_mu_);
    auto [it, added] = kept_uses_.emplace(n, want);
    got = it->second;
    here = added;
  }
  if (decided_here != nullptr) *decided_here = here;
  return got == want;
}

bool Cache::kept_record_usable(const ChunkRecord& record) {
  if (kept_ == nullptr || record.tier != Tier::kFile ||
      (record.segment & Segments::kKeptSegment) == 0) {
    return true;
  }
  const std::uint32_t n = record.segment & Segments::kKeptNumberMask;
  if (n >= kept_->file_count()) return false;
  {
    std::lock_guard lock(kept_mu_);
    if (kept_touched_.contains(n)) return true;
  }
  if (!kept_use(n, true)) return false;  // evicted for room: its bytes are gone
  std::lock_guard lock(kept_mu_);
  kept_touched_.insert(n);
  return true;
}

bool Cache::adopt_kept(const Key& key, std::uint64_t version, std::uint64_t length,
                       const ChunkRecord* into, ChunkRecord* out) {
  if (kept_ == nullptr || closing()) return false;
  const KeptRecord* r = kept_->find(key);
  if (r == nullptr || (r->flags & KeptRecord::kAnswer) != 0) return false;
  if (r->version != version || r->length != length || version == 0) {
    // Another version of the file (it changed or went between the steps): never these bytes.
    stats_.add(Counter::kept_bytes_dropped_changed, r->length);
    return false;
  }
  auto where = kept_file(r->file, true, nullptr);
  if (!where.ok()) return false;
  {
    bool known = false;
    {
      std::lock_guard lock(kept_mu_);
      known = kept_touched_.contains(r->file);
    }
    if (!known && !kept_use(r->file, true)) return false;  // evicted for room in this step
  }
  ChunkRecord kept;
  kept.owner = where->first;
  kept.tier = Tier::kFile;
  kept.segment = where->second;
  kept.offset = r->offset;
  kept.length = r->length;
  kept.version = r->version;
  kept.hash = r->hash;
  const std::span<const std::byte> bytes = node_bytes(kept);
  if (bytes.size() != length) return false;
  // First use in this step: checked before anyone is served from it.
  if (!verified(bytes, r->hash, kept.owner, "a kept store")) {
    stats_.add(Counter::integrity_refetched);
    return false;
  }
  if (into != nullptr) {
    const std::span<std::byte> dst = own_bytes(*into);
    if (dst.size() != length) return false;
    std::memcpy(dst.data(), bytes.data(), length);
    kept = *into;
    kept.version = r->version;
    kept.hash = r->hash;
  }
  stats_.add(Counter::kept_bytes_adopted, length);
  stats_.add(Counter::kept_chunks_adopted);
  // Used in this step: the file's last use, for the least-recently-used order of eviction (a
  // file adopted only to publish its chunks for other nodes is not touched).
  bool first_use = false;
  {
    std::lock_guard lock(kept_mu_);
    first_use = kept_touched_.insert(r->file).second;
  }
  if (first_use) KeptStore::touch(kept_->file(r->file).path);
  *out = kept;
  return true;
}

void Cache::leave_tier(const KeptStore::File& file) {
  // A memory file goes to the disk tier when this rank's share of the disk budget has room for
  // it (taken first; given back if the move fails, as far as the arena's capacity allows); else,
  // or when the move fails, it is dropped.
  bool moved = false;
  Arena* disk = file.disk || file.answers ? nullptr : tiers_.get(Tier::kDisk);
  if (disk != nullptr && disk->reserve(file.bytes).ok()) {
    auto demoted = kept_->demote(file);
    moved = demoted.ok();
    if (!moved) {
      disk->raise_limit(file.bytes);
      LARDER_LOG_INFO("kept file {} is dropped, not moved to the disk tier: {}", file.path,
                      demoted.status().message());
    }
  }
  if (moved) {
    stats_.add(Counter::kept_bytes_demoted, file.bytes);
  } else {
    KeptStore::evict(file);
    stats_.add(Counter::kept_bytes_evicted, file.bytes);
  }
  Arena* arena = tiers_.get(file.disk ? Tier::kDisk : Tier::kMem);
  if (arena != nullptr) arena->raise_limit(file.bytes);
}

bool Cache::make_room(Tier tier, std::uint64_t length) {
  if (kept_ == nullptr || closing()) return false;
  std::uint64_t freed = 0;
  const std::size_t t = tier == Tier::kDisk ? 1 : 0;
  // The room an eviction frees is the evicting rank's (its arena's limit grows), so the node's
  // ranks share the kept files: a rank first evicts its own share (file n is node-local rank
  // n mod R's), then any file. Otherwise one rank could take every file's room while another
  // rank of the node, short of room, reads the PFS.
  const int node = topology_.node();
  const auto ranks = static_cast<std::uint32_t>(std::max(1, topology_.ranks_on_node(node)));
  const auto mine = static_cast<std::uint32_t>(topology_.index_on_node(topology_.rank)) % ranks;
  for (const bool own : {true, false}) {
    // Files are in the table least recently used first; each is decided once per node. A file no
    // rank of this node has read from in this step goes: one adopted only to publish its chunks
    // for other nodes too (its pages are punched out, so its mappings stay valid and read zeros,
    // which the other nodes' hash checks reject; so only with LARDER_VERIFY on).
    std::atomic<std::uint32_t>& next = own ? kept_evict_own_next_[t] : kept_evict_next_[t];
    for (std::uint32_t n = next.load(std::memory_order_relaxed);
         n < kept_->file_count() && freed < length; n = next.load()) {
      if (!next.compare_exchange_strong(n, n + 1)) continue;
      if (own && n % ranks != mine) continue;
      const KeptStore::File& file = kept_->file(n);
      if (file.disk != (tier == Tier::kDisk) || file.answers) continue;
      bool evicted = false;
      auto adopted = kept_file(n, false, &evicted);
      bool decided = false;
      // Evicted once, by the rank that decided it: a file another rank already evicted in its
      // pass over the files is not evicted (nor its room given) again.
      if (!evicted && adopted.ok() && config_.verify && kept_use(n, false, &decided) && decided) {
        leave_tier(file);
        evicted = true;
      }
      if (evicted) freed += file.bytes;
    }
    if (freed >= length) break;
  }
  if (freed > 0) LARDER_LOG_INFO("evicted {} bytes of kept files to make room", freed);
  return freed > 0;
}

void Cache::record_placed(const Key& key, const ChunkRecord& record, std::uint32_t flags) {
  if (kept_place_ == nullptr || record.owner != topology_.rank) return;
  if (record.tier == Tier::kFile && segments_ != nullptr && segments_->kept(record.segment)) return;
  KeptRecord r;
  r.word = key.word;
  r.check = key.check;
  r.home = key.home;
  r.version = record.version;
  r.hash = record.hash;
  r.offset = record.offset;
  r.length = static_cast<std::uint32_t>(record.length);
  r.file = static_cast<std::uint32_t>(record.tier);
  r.segment = record.segment;
  r.flags = flags & KeptRecord::kPublished;
  std::lock_guard lock(kept_mu_);
  placed_.push_back(r);
}

Result<std::uint64_t> Cache::keep_step(const std::string& job) {
  if (kept_place_ == nullptr) return std::uint64_t{0};
  std::vector<KeptRecord> records;
  std::vector<KeptProduced> produced;
  {
    std::lock_guard lock(kept_mu_);
    records.swap(placed_);
    produced.swap(produced_);
  }
  // This rank's files that hold a placed record: its arenas and the segments it wrote.
  std::vector<std::string> files;
  std::vector<bool> disk;
  std::unordered_map<std::uint64_t, std::uint32_t> number;  // (tier, segment) -> file
  std::vector<KeptRecord> kept;
  kept.reserve(records.size());
  for (KeptRecord r : records) {
    const auto tier = static_cast<Tier>(r.file);
    // An arena is one file whatever a record's `segment` says (a copy's record may carry its
    // source's): keyed by the tier alone, or the arena was listed twice and its second move
    // failed, losing the rank's whole part of the step.
    const std::uint64_t id =
        (static_cast<std::uint64_t>(r.file) << 32) | (tier == Tier::kFile ? r.segment : 0);
    auto it = number.find(id);
    if (it == number.end()) {
      const Arena* holder = tier == Tier::kFile
                                ? (segments_ != nullptr ? segments_->find(r.segment) : nullptr)
                                : tiers_.get(tier);
      if (holder == nullptr) continue;  // a segment dropped since
      it = number.emplace(id, static_cast<std::uint32_t>(files.size())).first;
      files.push_back(holder->path());
      disk.push_back(disk_backed(tier, r.segment));
    }
    r.file = it->second;
    r.segment = 0;
    kept.push_back(r);
  }
  std::vector<std::byte> answers;
  std::vector<KeptRecord> answer_records;
  collect_answers(&answers, &answer_records);
  std::unique_ptr<bool[]> flags(new bool[disk.size()]);
  for (std::size_t i = 0; i < disk.size(); ++i) flags[i] = disk[i];
  auto n = KeptStore::keep_rank(*kept_place_, job, topology_.rank, files,
                                std::span<const bool>(flags.get(), disk.size()), kept, produced,
                                answers, answer_records);
  if (n.ok()) {
    stats_.add(Counter::kept_bytes_kept, *n);
    stats_.add(Counter::kept_answers_kept, answer_records.size());
  }
  return n;
}

// ---- stat answers and listings ---------------------------------------------------------------

void Cache::note_path(const Key& key, const std::string& path, bool link) {
  if (kept_place_ == nullptr) return;
  std::string tagged(1, link ? kKeptLinkPath : kKeptPath);
  tagged += path;
  std::lock_guard lock(kept_mu_);
  noted_answers_.emplace(key, std::move(tagged));
}

void Cache::note_listing(const Key& key, const std::string& path) {
  if (kept_place_ == nullptr) return;
  std::lock_guard lock(kept_mu_);
  noted_listings_.emplace(key, path);
}

void Cache::collect_answers(std::vector<std::byte>* bytes, std::vector<KeptRecord>* records) {
  std::unordered_map<Key, std::string, KeyHash> paths;
  std::unordered_map<Key, std::string, KeyHash> listings;
  {
    std::lock_guard lock(kept_mu_);
    paths.swap(noted_answers_);
    listings.swap(noted_listings_);
  }
  // The node's answer now (a renewal may have replaced the one noted), as this rank knows it.
  auto add = [&](const Key& key, const Payload& payload, std::span<const std::byte> blob) {
    KeptRecord r;
    r.word = key.word;
    r.check = key.check;
    r.home = key.home;
    r.offset = bytes->size();
    r.length = static_cast<std::uint32_t>(payload.size() + blob.size());
    bytes->insert(bytes->end(), payload.begin(), payload.end());
    bytes->insert(bytes->end(), blob.begin(), blob.end());
    r.hash = config_.verify ? content_hash(bytes->data() + r.offset, r.length) : 0;
    records->push_back(r);
  };
  for (const auto& [key, tagged] : paths) {
    Payload payload;
    if (!known_answer(key, &payload)) continue;
    const auto rec = unpack<PathRecord>(payload);
    if (rec.produced() || rec.local_only()) continue;  // produced files are kept their own way
    // With its path, so that the next step can check it ahead (check_kept_paths_soon).
    add(key, payload, std::as_bytes(std::span(tagged)));
  }
  for (const auto& [key, path] : listings) {
    Payload payload;
    if (!known_answer(key, &payload)) continue;
    const auto rec = unpack<ListingRecord>(payload);
    std::shared_ptr<const Listing> listing;
    if (rec.error == 0) {
      std::shared_lock lock(memo_mu_);
      auto it = listings_.find(path);
      if (it == listings_.end() || it->second.payload != payload) continue;
      listing = it->second.listing;
    }
    if (listing != nullptr &&
        (listing->records.size() != rec.length || listing->records.size() > 0xffff'ffffu / 2)) {
      continue;
    }
    add(key, payload,
        listing != nullptr ? std::span<const std::byte>(listing->records)
                           : std::span<const std::byte>{});
  }
}

bool Cache::kept_answer(const Key& key, std::vector<std::byte>* bytes) {
  if (kept_ == nullptr || closing()) return false;
  const KeptRecord* r = kept_->find(key);
  if (r == nullptr || (r->flags & KeptRecord::kAnswer) == 0 || r->length < kPayloadSize) {
    return false;
  }
  if (!kept_->read_answer(*r, bytes)) return false;
  // First use in this step: checked as kept chunks are.
  if (!verified(*bytes, r->hash, topology_.rank, "a kept store")) {
    stats_.add(Counter::integrity_refetched);
    return false;
  }
  bool first_use = false;
  {
    std::lock_guard lock(kept_mu_);
    first_use = kept_touched_.insert(r->file).second;
  }
  if (first_use) KeptStore::touch(kept_->file(r->file).path);
  return true;
}

bool Cache::kept_path_answer(const std::string& path, bool link, Loaded* out) {
  // A kept stat answer stands in for the PFS only where answers are never checked again
  // (LARDER_REVALIDATE=0): otherwise each step checks each path once, as a step's start is a
  // period's end (docs/user-guide.md, "Job steps").
  if (kept_ == nullptr || config_.revalidate.count() != 0) return false;
  std::vector<std::byte> bytes;
  if (!kept_answer(path_key(link ? KeyKind::kLinkPath : KeyKind::kPath, path), &bytes) ||
      bytes.size() < kPayloadSize) {
    return false;
  }
  Payload payload;
  std::memcpy(payload.data(), bytes.data(), kPayloadSize);
  if (unpack<PathRecord>(payload).produced()) return false;
  out->publish = true;
  out->answer.payload = payload;
  stats_.add(Counter::kept_answers_adopted);
  return true;
}

std::uint64_t Cache::check_kept_paths_soon() {
  // Answers used as they are (LARDER_REVALIDATE=0) need no check; without list-ahead's threads
  // the step checks each path when it first uses it, as before.
  if (kept_ == nullptr || config_.revalidate.count() == 0 || config_.list_ahead == 0 ||
      background_ == nullptr || closing()) {
    return 0;
  }
  // The node's ranks share its kept answers: record i goes to the node's rank i mod (ranks on
  // the node). Other nodes kept most of the same paths: the directory has each checked once.
  const auto ranks =
      static_cast<std::size_t>(std::max(1, topology_.ranks_on_node(topology_.node())));
  const auto mine = static_cast<std::size_t>(topology_.index_on_node(topology_.rank));
  const std::span<const KeptRecord> records = kept_->records();
  std::uint64_t queued = 0;
  auto batch = std::make_shared<std::vector<std::pair<std::string, bool>>>();
  auto submit = [&] {
    if (batch->empty()) return true;
    const std::size_t n = batch->size();
    if (!background_->submit([this, batch] { check_kept_paths(*batch); })) return false;
    queued += n;
    batch = std::make_shared<std::vector<std::pair<std::string, bool>>>();
    return true;
  };
  std::vector<std::byte> bytes;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const KeptRecord& r = records[i];
    if (i % ranks != mine || r.word == 0 || (r.flags & KeptRecord::kAnswer) == 0 ||
        r.length <= kPayloadSize + 1) {
      continue;
    }
    if (!kept_->read_answer(r, &bytes) || bytes.size() <= kPayloadSize + 1) continue;
    const auto kind = static_cast<char>(bytes[kPayloadSize]);
    if (kind != kKeptPath && kind != kKeptLinkPath) continue;  // a listing
    // The path only chooses what is asked: the answer is the PFS's, under the path's own key.
    std::string path(reinterpret_cast<const char*>(bytes.data()) + kPayloadSize + 1,
                     bytes.size() - kPayloadSize - 1);
    const bool link = kind == kKeptLinkPath;
    if (path.empty() || path.front() != '/' ||
        path_key(link ? KeyKind::kLinkPath : KeyKind::kPath, path) !=
            Key{r.word, r.check, r.home}) {
      continue;  // not the path the record was kept under: left to the step's own lookups
    }
    batch->emplace_back(std::move(path), link);
    // A full queue: the rest are checked at their first use.
    if (batch->size() >= config_.list_ahead && !submit()) return queued;
  }
  submit();
  if (queued > 0) LARDER_LOG_INFO("checking {} kept path answers ahead", queued);
  return queued;
}

bool Cache::kept_listing(const std::string& path, Loaded* out) {
  if (kept_ == nullptr) return false;
  std::vector<std::byte> bytes;
  if (!kept_answer(path_key(KeyKind::kListing, path), &bytes)) return false;
  Payload payload;
  std::memcpy(payload.data(), bytes.data(), kPayloadSize);
  auto rec = unpack<ListingRecord>(payload);
  const std::span<const std::byte> blob = std::span<const std::byte>(bytes).subspan(kPayloadSize);
  if (config_.revalidate.count() != 0) {
    // One stat of the directory instead of listing it again: the listing holds while the
    // directory is at the version it had before it was listed.
    if (rec.error != 0 || rec.dir_version == 0) return false;
    auto now = pfs_.resolve(path);
    if (!now.ok() || !now->meta.is_directory() || file_version(now->meta) != rec.dir_version) {
      return false;
    }
    rec.checked_s = now_s();
  }
  if (rec.error != 0) {
    if (!blob.empty()) return false;
  } else {
    Listing check;
    if (blob.size() != rec.length ||
        !check.adopt(std::vector<std::byte>(blob.begin(), blob.end())) ||
        check.count != rec.count) {
      return false;
    }
    if (!place_listing(blob, &rec)) return false;
  }
  out->publish = true;
  out->answer.payload = pack(rec);
  stats_.add(Counter::kept_answers_adopted);
  return true;
}

bool Cache::kept_elsewhere(const Key& key, std::uint64_t version, std::uint64_t length,
                           ChunkRecord* out) {
  if (kept_ == nullptr || closing() || version == 0) return false;
  count_directory_ops();
  auto claim = directory_.acquire(kept_key(key, version), kLookOnly);
  if (!claim.ok() || claim->outcome != Claim::Outcome::kReady) return false;
  const auto record = unpack<ChunkRecord>(claim->payload);
  if (record.owner < 0 || record.owner >= topology_.size || record.length != length ||
      record.version != version) {
    return false;
  }
  // This node's own kept copy is adopt_kept's, checked there at first use: here it is one that
  // failed that check (or was evicted), published unchecked at the step's start. Bytes from
  // another node are checked on arrival; bytes of this node would not be.
  if (on_this_node(record.owner)) return false;
  *out = record;
  return true;
}

bool Cache::kept_node_file(const CachedFile& file, const std::string& name) {
  if (kept_ == nullptr || closing() || file.size == 0 || file.version == 0) return false;
  const KeptRecord* first = kept_->find(chunk_key(file.id, 0));
  if (first == nullptr || first->version != file.version || first->offset != 0) return false;
  const std::uint32_t n = first->file;
  const KeptStore::File& kept = kept_->file(n);
  // Node files live in memory, beside the kept memory files (a link cannot cross file systems).
  if (kept.disk) return false;
  struct stat st {};
  if (sys::stat(kept.path.c_str(), &st) != 0 ||
      static_cast<std::uint64_t>(st.st_size) != file.size) {
    return false;  // the kept file holds more than this file (an arena) or is gone
  }
  // Every chunk of this version at its own offset of that one kept file...
  const ChunkGeometry geometry{file.size, config_.chunk_size};
  for (std::uint64_t index = 0; index < geometry.chunk_count(); ++index) {
    const KeptRecord* r = kept_->find(chunk_key(file.id, index));
    if (r == nullptr || r->file != n || r->version != file.version ||
        r->offset != index * config_.chunk_size || r->length != geometry.chunk_length(index)) {
      return false;
    }
  }
  // ...and this step's record of each chunk is that kept copy, adopted and checked (by this rank
  // or by the node's rank that resolved the chunk first). Otherwise the node file is built as
  // usual, from whatever the chunks' records are.
  for (std::uint64_t index = 0; index < geometry.chunk_count(); ++index) {
    auto located = locate(file, index, nullptr);
    if (!located.ok() || located->source != Source::kCache) return false;
    const ChunkRecord& r = located->record;
    if (r.tier != Tier::kFile || (r.segment & Segments::kKeptSegment) == 0 ||
        (r.segment & Segments::kDiskSegment) != 0 || (r.segment & Segments::kKeptNumberMask) != n ||
        !on_this_node(r.owner) || r.offset != index * config_.chunk_size) {
      return false;
    }
  }
  if (sys::link(kept.path.c_str(), name.c_str()) != 0 && errno != EEXIST) {
    LARDER_LOG_LIMITED(kInfo, "kept file {} cannot be the node file of {}: {}", kept.path,
                       file.path, std::strerror(errno));
    return false;
  }
  stats_.add(Counter::node_files);
  stats_.add(Counter::node_file_bytes, file.size);
  stats_.add(Counter::kept_node_files);
  return true;
}

std::uint64_t Cache::publish_kept() {
  // One node: no other node to serve.
  if (kept_ == nullptr || closing() || nodes_ <= 1) return 0;
  // The node's ranks share the work: slot i goes to the node's rank i mod (ranks on the node).
  const int node = topology_.node();
  std::uint64_t ranks = 0;
  std::uint64_t mine = 0;
  for (int r = 0; r < topology_.size; ++r) {
    if (topology_.node_of(r) != node) continue;
    if (r == topology_.rank) mine = ranks;
    ++ranks;
  }
  const std::span<const KeptRecord> slots = kept_->records();
  std::uint64_t published = 0;
  constexpr std::size_t kBatch = 4096;
  std::vector<Lookup> lookups;
  std::vector<Payload> records;
  auto flush = [&] {
    published += claim_and_publish(lookups, records);
    lookups.clear();
    records.clear();
  };
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const KeptRecord& r = slots[i];
    if (r.word == 0 || (r.flags & KeptRecord::kPublished) == 0 || r.version == 0) continue;
    if (i % ranks != mine) continue;
    auto where = kept_file(r.file, true, nullptr);
    if (!where.ok()) continue;
    ChunkRecord record;
    record.owner = where->first;
    record.tier = Tier::kFile;
    record.segment = where->second;
    record.offset = r.offset;
    record.length = r.length;
    record.version = r.version;
    record.hash = r.hash;
    // Not hashed here: the node that copies it checks it on arrival (and this node, at its
    // first use in the step). Hashing every kept chunk here took most of a warm step's start.
    // But a record past the end of its kept file (cut short: a torn write) is not published:
    // no reader could be served from it.
    if (node_bytes(record).size() != record.length) continue;
    const Key key{r.word, r.check, r.home};
    lookups.push_back(Lookup{kept_key(key, r.version), kClaimIt});
    records.push_back(pack(record));
    if (lookups.size() == kBatch) flush();
  }
  flush();
  LARDER_LOG_INFO("published {} kept chunks of this node", published);
  return published;
}

std::uint64_t Cache::claim_and_publish(std::span<const Lookup> lookups,
                                       std::span<const Payload> payloads) {
  if (lookups.empty()) return 0;
  std::vector<Result<Claim>> claims(lookups.size(), Status());
  count_directory_ops(lookups.size());
  directory_.acquire_many(lookups, claims);
  std::vector<Directory::Final> finals;
  for (std::size_t i = 0; i < lookups.size(); ++i) {
    if (!claims[i].ok() || claims[i]->outcome != Claim::Outcome::kClaimed) continue;
    finals.push_back(Directory::Final{lookups[i].key, payloads[i], true, false});
  }
  std::vector<Status> out(finals.size());
  count_directory_ops(finals.size());
  directory_.finish_many(finals, out);
  return static_cast<std::uint64_t>(
      std::count_if(out.begin(), out.end(), [](const Status& st) { return st.ok(); }));
}

std::uint64_t Cache::publish_kept_produced() {
  if (kept_ == nullptr || kept_place_ == nullptr || closing()) return 0;
  const int node = topology_.node();
  if (topology_.leader_of(node) != topology_.rank) return 0;
  std::uint64_t published = 0;
  for (const KeptProduced& p : KeptStore::produced(*kept_place_)) {
    PathRecord record;
    if (p.answer.size() != sizeof record) continue;
    std::memcpy(&record, p.answer.data(), sizeof record);
    if (!record.local_only() || record.error != 0) continue;
    // Every chunk of this version, kept on this node (a trimmed or older-chunk-size store may
    // lack some: then the file is gone with the step that produced it).
    const ChunkGeometry geometry{record.meta.size, config_.chunk_size};
    std::vector<std::uint32_t> files;
    bool whole = true;
    for (std::uint64_t i = 0; whole && i < geometry.chunk_count(); ++i) {
      const KeptRecord* r = kept_->find(chunk_key(record.file, i));
      whole =
          r != nullptr && r->version == record.version() && r->length == geometry.chunk_length(i);
      if (whole && (files.empty() || files.back() != r->file)) files.push_back(r->file);
    }
    if (!whole) {
      LARDER_LOG_WARN(
          "{} (produced in local mode by an earlier step) is not whole in the kept "
          "store; it is not published",
          p.path);
      continue;
    }
    // The file system's own file at that path, if one appeared since, is the answer.
    if (pfs_.resolve(p.canonical).ok()) continue;
    // Its bytes have no other copy: the node keeps its kept files for this step.
    for (std::uint32_t n : files) (void)kept_use(n, true);
    record.checked_s = now_s();
    std::vector<Lookup> lookups;
    for (const Key& k : produced_keys(p.path, p.canonical)) lookups.push_back(Lookup{k, kClaimIt});
    const std::vector<Payload> answers(lookups.size(), pack(record));
    published += claim_and_publish(lookups, answers) > 0 ? 1 : 0;
  }
  if (published > 0) {
    LARDER_LOG_INFO("published {} files produced in local mode by earlier steps", published);
  }
  return published;
}

}  // namespace larder
