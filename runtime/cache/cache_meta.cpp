// The Cache's metadata: the stat() answers of paths, and directory listings (cache.hpp).
#include <ctime>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/cache/cache.hpp"
#include "runtime/cache/cache_resolve.hpp"
#include "runtime/common/log.hpp"
#include "runtime/path/path.hpp"

namespace larder {
namespace {

// Errors that are answers about the path (cached like a successful stat); anything else (EIO,
// ENOMEM...) says nothing lasting and is not cached.
bool is_lasting_error(int err) noexcept {
  return err == ENOENT || err == ENOTDIR || err == EACCES || err == ELOOP || err == ENAMETOOLONG ||
         err == EPERM;
}

Result<Payload> as_is(const Payload& p) {
  return p;
}

}  // namespace

Result<PathRecord> Cache::lookup(const std::string& path) {
  if (config_.produced(path)) return lookup_produced(path);
  return lookup_key(path, path_key(KeyKind::kPath, path), false);
}

Result<PathRecord> Cache::lookup_link(const std::string& path) {
  if (config_.produced(path)) return lookup_produced(path);  // never a link
  auto followed = lookup(path);
  if (followed.ok() && followed->error == 0 && followed->file == file_id_of(path)) return followed;
  return lookup_key(path, path_key(KeyKind::kLinkPath, path), true);
}

std::int64_t Cache::now_s() const {
  if (clock_) return clock_();
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec);
}

Cache::Loaded Cache::load_path(const std::string& path, bool link) {
  stats_.add(Counter::meta_misses);
  if (Loaded kept; kept_path_answer(path, link, &kept)) return kept;
  PathRecord record;
  record.checked_s = now_s();
  int error = 0;
  if (link) {
    auto meta = pfs_.lstat(path);
    if (meta.ok()) {
      record.meta = *meta;
      record.file = file_id_of(path);
      record.flags = PathRecord::kManaged;  // the link itself lies where it is written
    } else if (meta.status().code() == Errc::kUnavailable) {
      Loaded l;
      l.answer.kind = Answer::Kind::kError;
      l.answer.error = meta.status();
      return l;
    } else {
      error = meta.status().native_code();
    }
  } else {
    auto resolved = pfs_.resolve(path);
    if (resolved.ok()) {
      record.meta = resolved->meta;
      record.file = file_id_of(resolved->canonical);
      const bool managed = config_.any_path() || config_.lexically_managed(resolved->canonical);
      record.flags = managed ? PathRecord::kManaged : 0;
    } else {
      error = resolved.status().native_code();
    }
  }
  Loaded l;
  l.answer.payload = pack(record);
  if (error != 0) {
    record.checked_s = now_s();
    record.error = error;
    l.answer.payload = pack(record);
    if (!is_lasting_error(error)) {
      l.answer.kind = Answer::Kind::kTransient;  // an answer for this call only
      return l;
    }
  }
  l.publish = true;
  return l;
}

Result<PathRecord> Cache::lookup_key(const std::string& path, const Key& key, bool link) {
  Answer a = resolve(
      key, kClaimIt, [&](std::uint64_t) { return load_path(path, link); },
      [](const Payload& p, const Tree&) { return as_is(p); });
  if (a.kind == Answer::Kind::kDirect) {
    // The cache cannot answer (directory full, finalize under way): ask the PFS for this rank.
    Loaded l = load_path(path, link);
    a = l.answer;
    if (l.publish && !closing()) memo_put(key, a.payload);
    if (l.publish) a.kind = Answer::Kind::kCached;
  }
  if (a.kind == Answer::Kind::kCached && a.global) note_path(key, path, link);  // for the node
  switch (a.kind) {
    case Answer::Kind::kCached:
      if (a.fresh) return unpack<PathRecord>(a.payload);
      stats_.add(Counter::meta_hits);
      return revalidated(path, key, link, unpack<PathRecord>(a.payload), a.payload);
    case Answer::Kind::kTransient:
      return unpack<PathRecord>(a.payload);
    case Answer::Kind::kError:
      return a.error;
    case Answer::Kind::kDirect:
      break;
  }
  return Status(Errc::kUnavailable, 0, "the cache cannot answer for " + path);
}

PathRecord Cache::revalidated(const std::string& path, const Key& key, bool link,
                              const PathRecord& record, const Payload& seen) {
  if (config_.revalidate.count() == 0 || closing() || record.produced() ||
      now_s() - record.checked_s < config_.revalidate.count()) {
    return record;
  }
  NodeTable::Found renewal;  // kFull: no node table, or the key is not in it: this rank asks
  if (node_ != nullptr) renewal = node_->renew(key, seen, config_.wait_timeout);
  switch (renewal.outcome) {
    case NodeTable::Found::Outcome::kReady:  // another rank of the node asked the PFS
      memo_put(key, renewal.payload);
      return unpack<PathRecord>(renewal.payload);
    case NodeTable::Found::Outcome::kTimeout:  // the node's renewer is stuck or gone
    case NodeTable::Found::Outcome::kFailed:
    case NodeTable::Found::Outcome::kClaimed:  // this rank renews the entry for the node
    case NodeTable::Found::Outcome::kFull:
      break;  // this rank asks the PFS itself
  }
  stats_.add(Counter::meta_revalidations);
  const Loaded now = load_path(path, link);
  Payload answer = seen;  // a transient error (EIO): keep the answer, ask again next time
  PathRecord result = record;
  if (now.publish) {
    result = unpack<PathRecord>(now.answer.payload);
    answer = now.answer.payload;
    if (!result.same_as(record)) report_change(path, record, result);
  }
  if (renewal.outcome == NodeTable::Found::Outcome::kClaimed) node_->publish(renewal.slot, answer);
  memo_put(key, answer);
  if (renewal.outcome == NodeTable::Found::Outcome::kClaimed || node_ == nullptr) {
    note_path(key, path, link);
  }
  return result;
}

void Cache::report_change(const std::string& path, const PathRecord& before,
                          const PathRecord& after) {
  stats_.add(Counter::meta_changed);
  // Only a file that existed and changed is worth a warning (a path that appeared is normal),
  // and once per job: the first rank to claim the change's key in the directory names it.
  if (before.error != 0) return;
  const std::string what =
      "changed:" + path + ":" + std::to_string(after.version()) + ":" + std::to_string(after.error);
  const Key key = path_key(KeyKind::kPath, what);
  auto claim = closing() ? Result<Claim>(Status(Errc::kUnavailable, 0, "closing"))
                         : directory_.acquire(key, kClaimIt);
  if (claim.ok() && claim->outcome != Claim::Outcome::kClaimed) return;
  if (claim.ok()) (void)directory_.publish(key, Payload{});
  LARDER_LOG_WARN("{} changed during the job ({}); it is read from the file system from now on",
                  path, after.error != 0 ? std::strerror(after.error) : "its size, times or inode");
}

Result<PathRecord> Cache::lookup_for_open(const std::string& path) {
  if (config_.produced(path)) return lookup_produced(path);
  const Key pkey = path_key(KeyKind::kPath, path);
  Payload payload;
  // With node groups the path and chunk 0 go through their group entries one by one.
  if (node_ == nullptr || closing() || grouped() || memo_find(pkey, &payload)) {
    return lookup(path);
  }
  const NodeTable::Found np = node_acquire(pkey, config_.wait_timeout);
  if (np.outcome == NodeTable::Found::Outcome::kReady) {
    stats_.add(Counter::node_answers);
    stats_.add(Counter::meta_hits);
    memo_put(pkey, np.payload);
    return revalidated(path, pkey, false, unpack<PathRecord>(np.payload), np.payload);
  }
  if (np.outcome == NodeTable::Found::Outcome::kTimeout) {
    return Status(Errc::kTimeout, ETIMEDOUT, "the node's resolver of " + path + " timed out");
  }
  if (np.outcome != NodeTable::Found::Outcome::kClaimed) return lookup(path);
  // This rank resolves the path for its node. Chunk 0 of the file it names (when the path is
  // the canonical name, the usual case) lives on the same home rank: one round trip for both.
  const FileId guess = file_id_of(path);
  const Key ckey = chunk_key(guess, 0);
  const NodeTable::Found nc = node_acquire(ckey, std::chrono::milliseconds(0));
  const bool both = nc.outcome == NodeTable::Found::Outcome::kClaimed;
  const Lookup lookups[2] = {{pkey, kClaimIt}, {ckey, kClaimIt | kTicket}};
  Result<Claim> claims[2] = {Status(Errc::kInternal, 0, ""), Status(Errc::kInternal, 0, "")};
  // In a job of one node the node table's claims are the job's (resolve_on_node).
  const bool alone = one_node();
  if (!alone) {
    directory_.acquire_many(std::span(lookups, both ? 2 : 1), std::span(claims, both ? 2 : 1));
    count_directory_ops(both ? 2 : 1);
  }
  auto load_meta = [&](std::uint64_t) { return load_path(path, false); };
  Answer a = alone ? resolve_on_node(pkey, load_meta)
                   : finish_claim(
                         pkey, claims[0], load_meta,
                         [](const Payload& p, const Tree&) { return as_is(p); }, nullptr, nodes_);
  if (a.kind == Answer::Kind::kCached) {
    node_->publish(np.slot, a.payload);
    note_path(pkey, path, false);
  } else {
    node_->fail(np.slot);
  }
  if (both) {
    const auto rec = unpack<PathRecord>(a.payload);
    const bool file = a.kind == Answer::Kind::kCached && rec.error == 0 && rec.meta.is_regular() &&
                      rec.meta.size > 0 && rec.file == guess;
    if (!file) {
      // Not the file the guess named (a symlink, a directory, a missing path): let it go.
      if (!alone && claims[1].ok() && claims[1]->outcome == Claim::Outcome::kClaimed) {
        (void)directory_.abandon(ckey);
      }
      node_->fail(nc.slot);
    } else {
      const CachedFile f = CachedFile::of(path, rec);
      const ChunkContext context(f, 0);
      const Payload read_pfs = direct_payload(FallbackCause::kNoRoom);
      auto load_first = [&](std::uint64_t ticket) { return load_chunk(f, 0, ticket, true); };
      const Answer c = alone ? resolve_on_node(ckey, load_first)
                             : finish_claim(
                                   ckey, claims[1], load_first,
                                   [&](const Payload& p, const Tree& tree) {
                                     return localize_chunk(ckey, p, tree, nullptr, &f, 0);
                                   },
                                   &read_pfs, nodes_);
      end_node_claim(nc.slot, c, alone ? &read_pfs : nullptr);
    }
  }
  if (a.kind == Answer::Kind::kCached || a.kind == Answer::Kind::kTransient) {
    return unpack<PathRecord>(a.payload);
  }
  return lookup(path);
}

// ---- listings --------------------------------------------------------------------------------

Result<std::shared_ptr<const Listing>> Cache::list(const std::string& path) {
  // Directories of produced files change during the job: listed by the file system each time.
  if (config_.produced(path)) return Status(Errc::kUnavailable, 0, "a produce directory");
  {
    std::shared_lock lock(memo_mu_);
    if (auto it = listings_.find(path); it != listings_.end()) {
      stats_.add(Counter::meta_hits);
      const KnownListing known = it->second;
      lock.unlock();
      if (closing() || !stale(unpack<ListingRecord>(known.payload).checked_s)) {
        return known.listing;
      }
      return relisted(path, known.payload);
    }
  }
  const Key key = path_key(KeyKind::kListing, path);
  const Answer a = resolve(
      key, kClaimIt, [&](std::uint64_t) { return load_listing(path); },
      [&](const Payload& p, const Tree&) { return localize_listing(p); });
  switch (a.kind) {
    case Answer::Kind::kCached: {
      if (!a.fresh && !closing() && stale(unpack<ListingRecord>(a.payload).checked_s)) {
        return relisted(path, a.payload);
      }
      auto listing = fetch_listing(path, a.payload);
      // This rank resolved the listing for its node: it resolves the entries too.
      if (a.global) {
        note_listing(key, path);
        list_ahead_soon(path, listing);
      }
      return listing;
    }
    case Answer::Kind::kTransient: {
      auto listing = std::make_shared<Listing>();
      listing->error = unpack<ListingRecord>(a.payload).error;
      return std::shared_ptr<const Listing>(std::move(listing));
    }
    case Answer::Kind::kDirect:
    case Answer::Kind::kError:
      break;
  }
  return list_direct(path);
}

std::shared_ptr<const Listing> Cache::relisted(const std::string& path, const Payload& seen) {
  const Key key = path_key(KeyKind::kListing, path);
  NodeTable::Found renewal;  // kFull: no node table, or the key is not in it: this rank lists
  if (node_ != nullptr) renewal = node_->renew(key, seen, config_.wait_timeout);
  if (renewal.outcome == NodeTable::Found::Outcome::kReady) {
    memo_put(key, renewal.payload);
    return fetch_listing(path, renewal.payload);
  }
  const bool claimed = renewal.outcome == NodeTable::Found::Outcome::kClaimed;
  stats_.add(Counter::meta_revalidations);
  const Loaded now = load_listing(path);
  if (!now.publish) {  // a transient error or no room: this call lists directly, the rest waits
    if (claimed) node_->publish(renewal.slot, seen);
    return list_direct(path);
  }
  if (claimed) node_->publish(renewal.slot, now.answer.payload);
  memo_put(key, now.answer.payload);
  auto listing = fetch_listing(path, now.answer.payload);
  if (claimed || node_ == nullptr) note_listing(key, path);
  return listing;
}

std::shared_ptr<const Listing> Cache::remember_listing(const std::string& path,
                                                       std::shared_ptr<const Listing> listing,
                                                       const Payload& payload) {
  std::unique_lock lock(memo_mu_);
  listings_.insert_or_assign(path, KnownListing{listing, payload});
  return listing;
}

std::shared_ptr<const Listing> Cache::fetch_listing(const std::string& path,
                                                    const Payload& payload) {
  const auto rec = unpack<ListingRecord>(payload);
  stats_.add(Counter::meta_hits);
  auto listing = std::make_shared<Listing>();
  if (rec.error != 0) {
    listing->error = rec.error;
    return remember_listing(path, std::move(listing), payload);
  }
  std::vector<std::byte> blob(rec.length);
  ChunkRecord where;
  where.owner = rec.owner;
  where.tier = rec.tier;
  where.offset = rec.offset;
  where.length = rec.length;
  where.hash = rec.hash;
  if (!copy_out(where, 0, blob, false) || !listing->adopt(std::move(blob)) ||
      listing->count != rec.count) {
    LARDER_LOG_LIMITED(kWarn, "cannot fetch the cached listing of {}; listing it directly", path);
    return list_direct(path);
  }
  return remember_listing(path, std::move(listing), payload);
}

Cache::Loaded Cache::load_listing(const std::string& path) {
  stats_.add(Counter::meta_misses);
  Loaded l;
  if (kept_listing(path, &l)) return l;
  ListingRecord rec;
  {
    // The directory's version from before the listing, for later steps (a kept listing holds
    // while the directory keeps it): only from an answer taken a second or more after the
    // directory's last change, as a PFS may keep times in whole seconds.
    // Only a step that keeps asks for it when this rank has none (the cache's own answer,
    // resolved once for the job).
    Payload p;
    std::optional<PathRecord> known;
    if (memo_find(path_key(KeyKind::kPath, path), &p)) {
      known = unpack<PathRecord>(p);
    } else if (kept_place_ != nullptr) {
      if (auto r = lookup(path); r.ok()) known = *r;
    }
    if (known) {
      const PathRecord& dir = *known;
      const std::int64_t last_change = std::max(dir.meta.mtime_ns, dir.meta.ctime_ns);
      if (dir.error == 0 && dir.meta.is_directory() &&
          last_change < (dir.checked_s - 1) * 1'000'000'000) {
        rec.dir_version = file_version(dir.meta);
      }
    }
  }
  auto raw = pfs_.list(path);
  rec.checked_s = now_s();
  if (!raw.ok()) {
    rec.error = raw.status().native_code() != 0 ? raw.status().native_code() : EIO;
    l.answer.payload = pack(rec);
    if (!is_lasting_error(rec.error)) {
      l.answer.kind = Answer::Kind::kTransient;  // an answer for this call only
      return l;
    }
    l.publish = true;
    return l;
  }
  Listing listing;
  if (!listing.adopt(std::move(*raw))) {
    rec.error = EIO;
    l.answer.kind = Answer::Kind::kTransient;
    l.answer.payload = pack(rec);
    return l;
  }
  if (!place_listing(listing.records, &rec)) return l;  // no room: everyone lists it directly
  rec.length = listing.records.size();
  rec.count = listing.count;
  rec.hash = hash_of(listing.records);
  l.publish = true;
  l.answer.payload = pack(rec);
  return l;
}

bool Cache::place_listing(std::span<const std::byte> records, ListingRecord* rec) {
  auto place = tiers_.allocate(records.size());
  if (!place.ok()) return false;
  Arena* arena = tiers_.get(place->tier);
  if (!records.empty()) std::memcpy(arena->data() + place->offset, records.data(), records.size());
  rec->owner = topology_.rank;
  rec->tier = place->tier;
  rec->offset = place->offset;
  return true;
}

Result<Payload> Cache::localize_listing(const Payload& payload) {
  const auto rec = unpack<ListingRecord>(payload);
  if (rec.error != 0 || rec.length == 0 || on_this_node(rec.owner) || node_ == nullptr ||
      transport_ == nullptr) {
    return payload;
  }
  // Another node's listing: a copy in this rank's arena serves the whole node.
  ChunkRecord source;
  source.owner = rec.owner;
  source.tier = rec.tier;
  source.offset = rec.offset;
  source.length = rec.length;
  source.hash = rec.hash;
  auto place = tiers_.allocate(rec.length);
  if (!place.ok()) return payload;
  ChunkRecord copy;
  copy.owner = topology_.rank;
  copy.tier = place->tier;
  copy.offset = place->offset;
  copy.length = rec.length;
  if (!copy_from(source, copy).ok()) return payload;
  ListingRecord local = rec;
  local.owner = copy.owner;
  local.tier = copy.tier;
  local.offset = copy.offset;
  return pack(local);
}

std::shared_ptr<const Listing> Cache::list_direct(const std::string& path) {
  auto listing = std::make_shared<Listing>();
  auto raw = pfs_.list(path);
  if (!raw.ok()) {
    listing->error = raw.status().native_code() != 0 ? raw.status().native_code() : EIO;
    return listing;
  }
  if (!listing->adopt(std::move(*raw))) listing->error = EIO;
  return listing;
}

}  // namespace larder
