// List-ahead (cache.hpp; docs/protocol.md, "List-ahead"): the rank that resolves a directory
// listing for its node resolves the stat answers of its entries, and the data of its small
// files, in batches: one directory round trip per phase for all of them (to every home rank at
// once), one for the publications, and the copies from other nodes issued together. An import
// or a walk of the tree then finds every answer on its node.
#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "runtime/cache/cache.hpp"
#include "runtime/cache/cache_resolve.hpp"
#include "runtime/cache/fanout.hpp"
#include "runtime/chunk/chunk_math.hpp"
#include "runtime/common/log.hpp"

namespace larder {

struct Cache::BulkItem {
  Key key;
  std::string path;
  bool link = false;  // a path answer: lstat (kLinkPath), not stat
  FileId file;        // chunks: the file's identity, size and version
  std::uint64_t size = 0;
  std::uint64_t version = 0;
  std::uint64_t index = 0;      // chunks: the chunk's index in the file
  bool node_claimed = false;    // this rank holds the key's node-table entry
  bool node_published = false;  // ... and has published it (as soon as it was loaded)
  bool ahead = false;           // a schedule's chunk: the node's record says so (ChunkRecord)
  std::uint32_t mark = 0;       // ... with its mark in the node's PrefetchMarks, once taken
  std::uint32_t slot = 0;
  Answer answer;  // the outcome (kCached: remember and share; otherwise the node's ranks retry)
  Result<Claim> claim = Status(Errc::kInternal, 0, "not looked up");
};

namespace {

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

}  // namespace

// The node's form of a scheduled chunk's answer: marked as made ready ahead (prefetch.ready),
// with the chunk's mark (taken once, for the node table's record and this rank's memo alike),
// when the bytes sit on this node. The directory keeps the unmarked answer.
Payload Cache::node_form(BulkItem& it, const Payload& payload) {
  if (!it.ahead) return payload;
  auto record = unpack<ChunkRecord>(payload);
  if (record.owner < 0 || !on_this_node(record.owner)) return payload;
  record.ahead = 1;
  if (it.mark == 0) {
    if (PrefetchMarks* marks = this->marks()) it.mark = marks->add(record.length);
  }
  record.mark = it.mark;
  return pack(record);
}

PrefetchMarks* Cache::marks() {
  std::call_once(marks_once_, [this] {
    if (node_ == nullptr) return;
    auto opened = PrefetchMarks::open(PrefetchMarks::path_for(node_->path()), true);
    if (opened.ok()) {
      marks_ = std::move(*opened);
    } else {
      LARDER_LOG_INFO("prefetch.unused_bytes is not counted: {}", opened.status().message());
    }
  });
  return marks_.get();
}

void Cache::load_all(std::size_t n, const std::function<void(std::size_t)>& load_one) {
  // Each load is a PFS round trip (a stat, or an open, a read and a close): with a PFS's latency
  // they are made several at a time, each thread taking the next until none is left. Threads
  // for this batch only, joined before it is published: nothing outlives the call.
  const std::size_t width = std::min<std::size_t>(config_.load_parallel, n / kLoadsPerThread);
  std::atomic<std::size_t> next{0};
  auto work = [&]() noexcept {
    for (std::size_t k = next.fetch_add(1); k < n; k = next.fetch_add(1)) {
      try {
        load_one(k);
      } catch (const std::exception& e) {  // that entry is abandoned: its readers read the PFS
        LARDER_LOG_LIMITED(kWarn, "a load failed: {}", e.what());
      }
    }
  };
  std::vector<std::thread> helpers;
  if (width > 1) {
    helpers.reserve(width - 1);
    for (std::size_t t = 1; t < width; ++t) {
      try {
        helpers.emplace_back(work);
      } catch (const std::system_error& e) {  // no thread: fewer at a time
        LARDER_LOG_LIMITED(kInfo, "a load thread could not start: {}", e.what());
        break;
      }
    }
  }
  work();
  for (std::thread& t : helpers) t.join();
}

bool Cache::claim_on_node(BulkItem& item, bool* node_failed) {
  Payload payload;
  if (memo_find(item.key, &payload)) return false;
  if (node_ == nullptr) return true;
  const NodeTable::Found f = node_->acquire(item.key, std::chrono::milliseconds(0));
  switch (f.outcome) {
    case NodeTable::Found::Outcome::kReady:
      memo_put(item.key, f.payload);
      return false;
    case NodeTable::Found::Outcome::kClaimed:
      item.node_claimed = true;
      item.slot = f.slot;
      return true;
    case NodeTable::Found::Outcome::kFailed:
      if (node_failed != nullptr) *node_failed = true;
      break;
    case NodeTable::Found::Outcome::kFull:
    case NodeTable::Found::Outcome::kTimeout:  // another rank of the node is resolving it
      break;
  }
  return false;
}

template <class Load, class LocalizeAll>
void Cache::resolve_bulk(std::vector<BulkItem>& items, unsigned flags, Load&& load,
                         LocalizeAll&& localize_all, const Payload* failed_as) {
  if (items.empty()) return;
  if (grouped() && !closing()) {
    resolve_bulk_in_group(items, flags, load, localize_all, failed_as);
  } else {
    resolve_bulk_at_home(items, flags, load, localize_all, failed_as);
  }
  for (BulkItem& it : items) {
    const bool cached = it.answer.kind == Answer::Kind::kCached;
    if (cached && it.ahead) {  // the directory has its answer: from here on the node's form
      it.answer.payload = node_form(it, it.answer.payload);
    }
    if (cached) memo_put(it.key, it.answer.payload);
    if (!it.node_claimed || it.node_published) continue;
    // This rank's own load in a job of one node (resolve_bulk_at_home) that kept nothing.
    const bool own_load =
        one_node() && it.claim.ok() && it.claim->outcome == Claim::Outcome::kClaimed;
    end_node_claim(it.slot, it.answer, own_load ? failed_as : nullptr);
  }
}

template <class Load, class LocalizeAll>
void Cache::resolve_bulk_in_group(std::vector<BulkItem>& items, unsigned flags, Load&& load,
                                  LocalizeAll&& localize_all, const Payload* failed_as) {
  // The group entries first, all at once: this node represents its group for some keys (it
  // asks their homes, then publishes its node's answers for the group), waits for the group's
  // representatives of others, and asks the homes itself where the group has no answer.
  std::vector<Lookup> lookups;
  lookups.reserve(items.size());
  for (const BulkItem& it : items) {
    lookups.push_back(Lookup{group_entry(it.key), kClaimIt | (flags & kTicket)});
  }
  std::vector<Result<Claim>> claims(items.size(), Status(Errc::kInternal, 0, ""));
  directory_.acquire_many(lookups, claims);
  count_directory_ops(items.size());
  std::vector<std::size_t> represented;
  std::vector<std::size_t> ready;
  std::vector<std::size_t> loading;
  std::vector<std::size_t> at_home;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!claims[i].ok()) {
      at_home.push_back(i);
      continue;
    }
    switch (claims[i]->outcome) {
      case Claim::Outcome::kClaimed:
        represented.push_back(i);
        break;
      case Claim::Outcome::kReady:
        ready.push_back(i);
        break;
      case Claim::Outcome::kLoading:
        loading.push_back(i);
        break;
      case Claim::Outcome::kFailed:
      case Claim::Outcome::kAbsent:
        at_home.push_back(i);
        break;
    }
  }
  // Resolves items[indices] at their homes, as without groups.
  auto at_homes = [&](const std::vector<std::size_t>& indices) {
    std::vector<BulkItem> part;
    part.reserve(indices.size());
    for (std::size_t i : indices) part.push_back(items[i]);
    resolve_bulk_at_home(part, flags, load, localize_all, failed_as);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      items[indices[k]].answer = part[k].answer;
      items[indices[k]].node_published = part[k].node_published;
    }
  };
  if (!represented.empty()) {
    at_homes(represented);
    std::vector<Directory::Final> finals;
    finals.reserve(represented.size());
    for (std::size_t i : represented) {
      const bool cached = items[i].answer.kind == Answer::Kind::kCached;
      finals.push_back(Directory::Final{
          lookups[i].key,
          cached ? group_form(items[i].answer.payload, (flags & kTicket) != 0, claims[i]->ticket)
                 : Payload{},
          cached});
    }
    std::vector<Status> out(finals.size());
    if (!closing()) directory_.finish_many(finals, out);
  }
  if (!loading.empty() && !closing()) {
    std::vector<Key> keys;
    std::vector<Claim> claims_loading;
    for (std::size_t i : loading) {
      keys.push_back(lookups[i].key);
      claims_loading.push_back(*claims[i]);
    }
    std::vector<Result<Claim>> seen(keys.size(), Status());
    directory_.wait_many(keys, claims_loading, config_.wait_timeout, seen);
    for (std::size_t k = 0; k < loading.size(); ++k) {
      const bool got = seen[k].ok() && seen[k]->outcome == Claim::Outcome::kReady;
      if (got) claims[loading[k]] = std::move(seen[k]);
      (got ? ready : at_home).push_back(loading[k]);
    }
  }
  // The group's answers: made usable here (a chunk copied from the representative's node).
  for (std::size_t i : ready) {
    items[i].answer = Answer{Answer::Kind::kCached, claims[i]->payload};
    stats_.add(Counter::group_answers);
  }
  localize_all(items, ready);
  if (!at_home.empty()) {
    const Retry again;  // the group had no answer for these
    at_homes(at_home);
  }
}

template <class Load, class LocalizeAll>
void Cache::resolve_bulk_at_home(std::vector<BulkItem>& items, unsigned flags, Load&& load,
                                 LocalizeAll&& localize_all, const Payload* failed_as) {
  std::vector<Result<Claim>> claims(items.size(), Status(Errc::kInternal, 0, ""));
  // In a job of one node, what this rank claimed in the node table is its own to load: the
  // directory is not asked (resolve_on_node, cache_resolve.hpp).
  const bool alone = one_node();
  if (!closing()) {
    std::vector<Lookup> lookups;
    std::vector<std::size_t> asked;
    lookups.reserve(items.size());
    asked.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (alone && items[i].node_claimed) {
        Claim own;
        own.outcome = Claim::Outcome::kClaimed;
        own.claimer = topology_.rank;
        claims[i] = own;
      } else {
        lookups.push_back(Lookup{items[i].key, flags});
        asked.push_back(i);
      }
    }
    if (!asked.empty()) {
      std::vector<Result<Claim>> answers(asked.size(), Status(Errc::kInternal, 0, ""));
      directory_.acquire_many(lookups, answers);
      count_directory_ops(asked.size());
      for (std::size_t k = 0; k < asked.size(); ++k) claims[asked[k]] = std::move(answers[k]);
    }
  }
  // The claimed ones: loaded here, several at a time (load_all), then published together.
  std::vector<Directory::Final> finals;
  std::vector<std::size_t> ready;
  std::vector<std::size_t> loading;
  std::vector<std::size_t> claimed;
  for (std::size_t i = 0; i < items.size(); ++i) {
    BulkItem& it = items[i];
    it.claim = std::move(claims[i]);
    if (!it.claim.ok()) continue;  // the directory cannot answer: the node's ranks ask again
    switch (it.claim->outcome) {
      case Claim::Outcome::kClaimed:
        claimed.push_back(i);
        break;
      case Claim::Outcome::kReady:
        ready.push_back(i);
        break;
      case Claim::Outcome::kLoading:
        loading.push_back(i);
        break;
      case Claim::Outcome::kFailed:
        if (failed_as != nullptr) it.answer = Answer{Answer::Kind::kCached, *failed_as};
        break;
      case Claim::Outcome::kAbsent:
        break;
    }
  }
  std::vector<Loaded> loaded(claimed.size());
  load_all(claimed.size(), [&](std::size_t k) {
    BulkItem& it = items[claimed[k]];
    loaded[k] = load(it);
    // Ready on the node as soon as it is loaded: a reader of the node waiting for it goes on
    // without waiting for the rest of the batch (the directory hears of the batch together).
    if (loaded[k].publish && it.node_claimed) {
      node_->publish(it.slot, node_form(it, loaded[k].answer.payload));
      it.node_published = true;
      prefetch_published(it.key);
    }
  });
  for (std::size_t k = 0; k < claimed.size(); ++k) {
    BulkItem& it = items[claimed[k]];
    Loaded& l = loaded[k];
    if (!(alone && it.node_claimed))
      finals.push_back(Directory::Final{it.key, l.answer.payload, l.publish});
    it.answer = std::move(l.answer);
    if (l.publish) {
      it.answer.kind = Answer::Kind::kCached;
      it.answer.fresh = true;
    }
  }
  if (!finals.empty() && !closing()) {
    std::vector<Status> published(finals.size());
    directory_.finish_many(finals, published);
    for (const Status& s : published) {
      if (!s.ok()) LARDER_LOG_LIMITED(kWarn, "cannot publish an entry: {}", s.to_string());
    }
  }
  // Entries other ranks were loading: waited for together (one registration message per
  // loader, one notification message per loader's batch).
  if (!loading.empty() && !closing()) {
    std::vector<Key> keys;
    std::vector<Claim> claims_loading;
    for (std::size_t i : loading) {
      keys.push_back(items[i].key);
      claims_loading.push_back(*items[i].claim);
    }
    std::vector<Result<Claim>> finals_seen(keys.size(), Status());
    directory_.wait_many(keys, claims_loading, config_.wait_timeout, finals_seen);
    for (std::size_t k = 0; k < loading.size(); ++k) {
      BulkItem& it = items[loading[k]];
      it.claim = std::move(finals_seen[k]);
      if (!it.claim.ok()) continue;  // timed out or failed: the node's ranks ask again
      if (it.claim->outcome == Claim::Outcome::kReady) {
        ready.push_back(loading[k]);
      } else if (it.claim->outcome == Claim::Outcome::kFailed && failed_as != nullptr) {
        it.answer = Answer{Answer::Kind::kCached, *failed_as};
      }
    }
  }
  for (std::size_t i : ready)
    items[i].answer = Answer{Answer::Kind::kCached, items[i].claim->payload};
  localize_all(items, ready);
}

void Cache::copy_chunks_here(std::vector<BulkItem>& items, const std::vector<std::size_t>& which,
                             bool copy_remote) {
  if (transport_ == nullptr || closing()) return;
  std::vector<Transport::GetOp> ops;
  std::vector<std::size_t> of;
  std::vector<ChunkRecord> copies;
  std::vector<Transport::Hashed> arrived;
  arrived.reserve(which.size());
  for (std::size_t i : which) {
    const auto origin = unpack<ChunkRecord>(items[i].answer.payload);
    if (origin.owner >= 0 && on_this_node(origin.owner) && !kept_record_usable(origin)) {
      items[i].answer.payload = direct_payload(FallbackCause::kNoRoom);  // an evicted kept file
      continue;
    }
    if (origin.owner < 0 || on_this_node(origin.owner)) continue;
    ChunkRecord kept;
    if (adopt_kept(items[i].key, origin.version, origin.length, nullptr, &kept)) {
      // An earlier step kept it on this node: no copy over the network.
      kept.position = fanout::kNoTicket;
      items[i].answer.payload = pack(kept);
      continue;
    }
    if (!copy_remote) {  // read from its origin when needed (Cache::list_ahead_copies)
      stats_.add(Counter::list_ahead_not_copied);
      continue;
    }
    if (origin.tier == Tier::kFile && !learn_segment(origin.owner, origin.segment).ok()) continue;
    auto place = tiers_.allocate(origin.length);
    if (!place.ok()) break;  // no room: the rest is read from its origin when needed
    ChunkRecord copy;
    copy.owner = topology_.rank;
    copy.tier = place->tier;
    copy.offset = place->offset;
    copy.length = origin.length;
    copy.position = fanout::kNoTicket;  // not a holder of the fan-out tree
    copy.version = origin.version;
    copy.hash = origin.hash;
    Arena* arena = tiers_.get(copy.tier);
    ops.push_back(Transport::GetOp{origin.owner,
                                   origin.tier,
                                   origin.segment,
                                   origin.offset,
                                   std::span(arena->data() + copy.offset, copy.length),
                                   nullptr,
                                   {origin.offset, origin.length, origin.hash}});
    if (config_.verify && copy.hash != 0) {
      ops.back().hashed = &arrived.emplace_back();  // `arrived` is reserved: never reallocated
    }
    of.push_back(i);
    copies.push_back(copy);
  }
  if (ops.empty()) return;
  std::vector<Status> got(ops.size());
  timed_get_many(ops, got);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    BulkItem& item = items[of[k]];
    const CachedFile file{item.path, item.file, item.size, item.version};
    const ChunkContext context(file, item.index);
    bool bad = !got[k].ok() && got[k].native_code() == EBADMSG;  // the holder's own check failed
    if (!got[k].ok() && !bad) {
      stats_.add(Counter::transport_errors);
      LARDER_LOG_LIMITED(kWarn, "{} get of {} bytes from rank {} failed: {}", transport_->name(),
                         ops[k].into.size(), ops[k].owner, got[k].to_string());
      continue;  // the origin's copy stays the answer
    }
    if (!bad) {
      stats_.add(Counter::transport_bytes, ops[k].into.size());
      bad = !verified(ops[k].into, copies[k].hash, ops[k].owner, "another node's copy",
                      ops[k].hashed);
    }
    if (bad) {
      // The origin's bytes are not the file's: the node takes the PFS's into its copy, once
      // for all its ranks (left as the answer, each rank would read them, find them bad and
      // read the PFS itself).
      stats_.add(Counter::integrity_refetched);
      if (!reload_chunk(file, item.index, copies[k])) {
        item.answer.payload = direct_payload(FallbackCause::kIntegrity);
        continue;
      }
      record_placed(item.key, copies[k]);
      item.answer.payload = pack(copies[k]);
      continue;
    }
    // List-ahead copies are outside the fan-out trees: about F of the nodes, picked by the key,
    // may stand in for the origin in a later step (KeptRecord::kStandIn).
    const Key& key = item.key;
    const bool stand_in = (key.word + static_cast<std::uint64_t>(topology_.node())) %
                              std::max<std::uint64_t>(nodes_, 1) <
                          tree_fanout_;
    record_placed(key, copies[k], stand_in ? KeptRecord::kStandIn : 0);
    stats_.add(Counter::node_copies);
    stats_.add(Counter::node_copy_bytes, ops[k].into.size());
    if (load_ != nullptr) load_->fetched(ops[k].owner, ops[k].into.size());
    item.answer.payload = pack(copies[k]);
  }
}

namespace {

// libfoo.so, libfoo.so.1, libfoo.so.1.2.3, module.cpython-311-x86_64-linux-gnu.so.
bool looks_like_shared_object(std::string_view name) {
  const std::size_t at = name.find(".so");
  if (at == std::string_view::npos || at == 0) return false;
  const std::string_view rest = name.substr(at + 3);
  if (rest.empty()) return true;
  if (rest.front() != '.') return looks_like_shared_object(rest);  // ".so" inside a longer name
  return std::all_of(rest.begin(), rest.end(),
                     [](char c) { return c == '.' || (c >= '0' && c <= '9'); });
}

}  // namespace

void Cache::list_ahead_soon(const std::string& dir, const std::shared_ptr<const Listing>& listing) {
  if (config_.list_ahead == 0 || listing == nullptr || listing->error != 0 || closing()) return;
  // Counted now, in the listing call: a tree listed one directory after another (ImageFolder's
  // classes) is mostly counted before list-ahead's first copies are decided.
  count_listed(*listing);
  // In the background: the listing call returns now, and the directories an application lists
  // one after another (ImageFolder's classes, a walk) are resolved several at a time, so their
  // PFS loads overlap across directories as well as within each batch.
  if (background_ != nullptr && config_.list_ahead_dirs > 0 &&
      background_->submit([this, dir, listing] { list_ahead(dir, *listing); })) {
    stats_.add(Counter::list_ahead_background);
    return;
  }
  stats_.add(Counter::list_ahead_inline);
  list_ahead(dir, *listing);
}

void Cache::count_listed(const Listing& listing) {
  const std::uint64_t files = listing.files();
  if (node_ == nullptr) {  // the node's count is this rank's
    listed_files_.fetch_add(files, std::memory_order_relaxed);
    return;
  }
  if (files == 0) return;
  constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint32_t>::max();
  std::atomic<std::uint32_t>& word = node_->node_word(NodeTable::kListedFiles);
  std::uint32_t now = word.load(std::memory_order_relaxed);
  std::uint32_t next = 0;
  do {
    const std::uint64_t sum = std::uint64_t{now} + files;
    next = static_cast<std::uint32_t>(std::min<std::uint64_t>(sum, kSaturated));
  } while (!word.compare_exchange_weak(now, next, std::memory_order_relaxed));
}

bool Cache::list_ahead_copies() const {
  const std::uint64_t resolved = resolved_files_.load(std::memory_order_relaxed);
  if (resolved == 0) return true;
  const std::uint64_t listed = node_ != nullptr ? node_->node_word_now(NodeTable::kListedFiles)
                                                : listed_files_.load(std::memory_order_relaxed);
  const double per_file =
      static_cast<double>(resolved_small_bytes_.load(std::memory_order_relaxed)) /
      static_cast<double>(resolved);
  const double budget =
      static_cast<double>(config_.mem_budget) + static_cast<double>(config_.disk_budget);
  return static_cast<double>(listed) * per_file <= budget;
}

void Cache::settle_background() {
  if (background_ != nullptr) background_->settle();
}

void Cache::stop_background() noexcept {
  if (prefetch_ != nullptr) prefetch_->stop();
  if (readahead_ != nullptr) readahead_->stop();
  if (background_ != nullptr) background_->stop();
  if (stage_ != nullptr) {  // staged and never read: what the schedule cost for nothing
    const PrefetchStage::Dropped d = stage_->drop_all();
    stats_.add(Counter::prefetch_unused_chunks, d.chunks);
    stats_.add(Counter::prefetch_unused_bytes, d.bytes);
  }
}

void Cache::list_ahead(const std::string& dir, const Listing& listing) {
  if (config_.list_ahead == 0 || listing.error != 0 || closing()) return;
  const std::vector<std::string> all = listing.names();
  // A large directory (a dataset's class of 100,000 files) in batches of LARDER_LIST_AHEAD
  // entries: the same round trips per batch, and memory bounded by one batch, not the directory.
  // Told the order, this rank leaves ahead-of-time work to the schedule, which names what the
  // node will read and when: a listing's every entry is more than a sampler's share.
  for (std::size_t at = 0;
       at < all.size() && !closing() && !scheduled_.load(std::memory_order_relaxed);
       at += config_.list_ahead) {
    const std::size_t n = std::min<std::size_t>(config_.list_ahead, all.size() - at);
    list_ahead_batch(dir, std::span(all).subspan(at, n));
  }
}

void Cache::resolve_paths(std::vector<BulkItem>& items) {
  // Claimed on the node (by the caller) and in the directory, stat'ed several at a time,
  // published together, and noted to be kept. A path another rank of the job has claimed is not
  // asked again.
  resolve_bulk(
      items, kClaimIt, [&](const BulkItem& it) { return load_path(it.path, it.link); },
      [](std::vector<BulkItem>&, const std::vector<std::size_t>&) {}, nullptr);
  for (const BulkItem& it : items) {
    if (it.answer.kind == Answer::Kind::kCached)
      note_path(it.key, it.path, it.link);  // for the node
  }
}

void Cache::check_kept_paths(const std::vector<std::pair<std::string, bool>>& paths) {
  std::vector<BulkItem> items;
  for (const auto& [path, link] : paths) {
    if (closing()) return;
    BulkItem it;
    it.path = path;
    it.link = link;
    it.key = path_key(link ? KeyKind::kLinkPath : KeyKind::kPath, path);
    if (claim_on_node(it)) items.push_back(std::move(it));
  }
  resolve_paths(items);
  stats_.add(Counter::kept_paths_checked_ahead, items.size());
}

void Cache::list_ahead_batch(const std::string& dir, std::span<const std::string> names) {
  if (names.empty()) return;
  // Phase 1: the stat answers of the entries.
  std::vector<BulkItem> paths;
  for (const std::string& name : names) {
    BulkItem it;
    it.path = join(dir, name);
    it.key = path_key(KeyKind::kPath, it.path);
    if (claim_on_node(it)) paths.push_back(std::move(it));
  }
  resolve_paths(paths);
  // Phase 2: the data of its small files (one chunk at most), known by their stat answers;
  // not once this rank was told its reads' order: the schedule says which of them the node
  // needs, and when (a listing's every file, loaded or copied to every node that lists it, is
  // more than a sampler's share).
  if (scheduled_.load(std::memory_order_relaxed)) return;
  const std::uint64_t small = std::min(config_.small_file, config_.chunk_size);
  std::vector<BulkItem> chunks;
  for (const std::string& name : names) {
    const std::string path = join(dir, name);
    Payload p;
    if (!memo_find(path_key(KeyKind::kPath, path), &p)) continue;
    const auto rec = unpack<PathRecord>(p);
    if (rec.error == 0 && rec.managed() && rec.meta.is_regular()) {
      resolved_files_.fetch_add(1, std::memory_order_relaxed);
      if (rec.meta.size <= small) {
        resolved_small_bytes_.fetch_add(rec.meta.size, std::memory_order_relaxed);
      }
    }
    if (rec.error != 0 || !rec.managed() || !rec.meta.is_regular() || rec.meta.size == 0 ||
        rec.meta.size > small) {
      continue;
    }
    // The loader's audit module maps shared objects from node files, which hold their chunks
    // themselves: loaded here, their bytes would be held twice on the node.
    if (objects_as_node_files_ && looks_like_shared_object(name)) continue;
    BulkItem it;
    it.path = path;
    it.file = rec.file;
    it.size = rec.meta.size;
    it.version = rec.version();
    it.key = chunk_key(rec.file, 0);
    if (claim_on_node(it)) chunks.push_back(std::move(it));
  }
  resolve_chunks(chunks, list_ahead_copies());
}

void Cache::resolve_chunks(std::vector<BulkItem>& chunks, bool copy_remote) {
  const Payload read_pfs = direct_payload(FallbackCause::kNoRoom);
  resolve_bulk(
      chunks, kClaimIt,
      [&](const BulkItem& it) {
        return load_chunk(CachedFile{it.path, it.file, it.size, it.version}, it.index,
                          fanout::kNoTicket, true);
      },
      [&](std::vector<BulkItem>& items, const std::vector<std::size_t>& ready) {
        copy_chunks_here(items, ready, copy_remote);
      },
      &read_pfs);
}

std::uint64_t Cache::room() const {
  std::uint64_t free = 0;
  for (int t = 0; t < kTierCount; ++t) {
    const Arena* arena = tiers_.get(static_cast<Tier>(t));
    if (arena != nullptr && arena->limit() > arena->used()) free += arena->limit() - arena->used();
  }
  return free;
}

bool Cache::prefetch_batch(std::span<const ScheduledRead> reads, PrefetchStage::Place place,
                           std::uint64_t* covered) {
  *covered = 0;
  // Phase 1: the stat answers of the paths (each once), as list-ahead's.
  std::vector<BulkItem> paths;
  std::unordered_set<Key, KeyHash> seen;
  for (const ScheduledRead& r : reads) {
    if (r.path.empty()) continue;
    BulkItem it;
    it.path = r.path;
    it.key = path_key(KeyKind::kPath, it.path);
    if (!seen.insert(it.key).second) continue;
    if (claim_on_node(it)) paths.push_back(std::move(it));
  }
  resolve_paths(paths);
  if (closing()) return true;
  // The answers another rank of the node was resolving in phase 1, waited for together.
  std::vector<std::optional<PathRecord>> records(reads.size());
  std::vector<std::size_t> unknown;
  for (std::size_t k = 0; k < reads.size(); ++k) {
    Payload p;
    if (reads[k].path.empty()) continue;
    if (memo_find(path_key(KeyKind::kPath, reads[k].path), &p)) {
      records[k] = unpack<PathRecord>(p);
    } else {
      unknown.push_back(k);
    }
  }
  load_all(unknown.size(), [&](std::size_t u) {
    auto found = lookup(reads[unknown[u]].path);
    if (found.ok()) records[unknown[u]] = *found;
  });
  // Phase 2: the chunks the reads cover that the node does not know yet, in order, as many as
  // the budget has room for (a prefetch never turns a later read into a fallback). Past the
  // budget, with a stage: the chunks the job will read from the PFS (known so, or claimed and
  // found so) are read into this rank's stage; without one they are read on demand.
  std::vector<BulkItem> chunks;
  std::vector<PrefetchStage::Place> chunks_at;
  std::vector<BulkItem> over;  // past the budget: claimed to learn where the job has them
  std::vector<PrefetchStage::Place> over_at;
  std::vector<BulkItem> staged;  // ... read from the PFS by their reads: into the stage
  std::vector<PrefetchStage::Place> staged_at;
  std::vector<BulkItem> copied;  // ... held on another node only: copied into the stage
  std::vector<PrefetchStage::Place> copied_at;
  const bool stage = stage_ != nullptr;
  // A chunk whose answer is known: into the stage when the job reads it from the PFS (no rank
  // had room for it), or when only another node holds it.
  auto stage_known = [&](BulkItem& it, const Payload& known, PrefetchStage::Place at) {
    if (!stage) return;
    if (no_room_payload(known)) {
      staged.push_back(std::move(it));
      staged_at.push_back(at);
    } else if (held_elsewhere(it.key, known)) {
      it.answer = Answer{Answer::Kind::kCached, known};
      copied.push_back(std::move(it));
      copied_at.push_back(at);
    }
  };
  // Chunks a later entry of the batch names again (a schedule of two epochs): a staged one is
  // kept for that entry's reads too.
  struct Again {
    Key key;
    std::uint64_t version;
    PrefetchStage::Place at;
  };
  std::vector<Again> again;
  std::uint64_t free = room();
  bool fits = true;
  seen.clear();
  for (std::size_t k = 0; k < reads.size(); ++k) {
    const ScheduledRead& r = reads[k];
    if (!records[k]) {
      stats_.add(Counter::prefetch_skipped);
      continue;
    }
    const PathRecord& rec = *records[k];
    if (rec.error != 0 || !rec.managed() || !rec.meta.is_regular() || rec.local_only()) {
      stats_.add(Counter::prefetch_skipped);
      continue;
    }
    const std::uint64_t size = rec.meta.size;
    if (r.offset >= size) continue;
    const std::uint64_t end =
        r.length == 0 || r.length > size - r.offset ? size : r.offset + r.length;
    *covered += end - r.offset;
    const ChunkGeometry geometry{size, config_.chunk_size};
    const PrefetchStage::Place at{place.generation, place.entry + k};
    for (std::uint64_t i = r.offset / config_.chunk_size;
         (fits || stage) && i <= (end - 1) / config_.chunk_size; ++i) {
      BulkItem it;
      it.key = chunk_key(rec.file, i);
      if (!seen.insert(it.key).second) {
        if (stage) again.push_back({it.key, rec.version(), at});  // named twice in the batch
        continue;
      }
      it.path = r.path;
      it.ahead = true;
      it.file = rec.file;
      it.size = size;
      it.version = rec.version();
      it.index = i;
      Payload known;
      if (memo_find(it.key, &known)) {
        stage_known(it, known, at);
        continue;
      }
      const std::uint64_t length = geometry.chunk_length(i);
      if (fits && length > free) fits = false;
      if (!fits && !stage) break;
      bool node_failed = false;
      if (!claim_on_node(it, &node_failed)) {
        // The node knows it (claim_on_node put its answer in the memo), another rank of the
        // node is resolving it, or the node's resolver could not keep it: then, with a stage,
        // the directory says where the job has it (its reads would each ask it too).
        if (memo_find(it.key, &known)) {
          stage_known(it, known, at);
        } else if (node_failed && stage) {
          over.push_back(std::move(it));
          over_at.push_back(at);
        } else if (stage && prefetching(it.key)) {
          // Another batch of this rank resolves it (a schedule of two epochs names it twice):
          // staged there, it is kept for this entry too.
          stage_->expect(it.key, at);
        }
        continue;
      }
      if (fits) {
        free -= length;
        chunks.push_back(std::move(it));
        chunks_at.push_back(at);
      } else {
        over.push_back(std::move(it));
        over_at.push_back(at);
      }
    }
    if (!fits && !stage) break;
  }
  chunks.insert(chunks.end(), std::make_move_iterator(over.begin()),
                std::make_move_iterator(over.end()));
  chunks_at.insert(chunks_at.end(), over_at.begin(), over_at.end());
  prefetch_claimed(chunks, true);
  try {
    resolve_chunks(chunks);
  } catch (...) {
    prefetch_claimed(chunks, false);
    throw;
  }
  prefetch_claimed(chunks, false);
  // Past the budget: the chunks the job reads from the PFS (no rank had room for them: the
  // loader gave its claim up, or the entry says so; room() counts free bytes over the tiers, so
  // a chunk it let through can still find no place).
  // And the chunks another node holds that this node had no room to copy: into the stage too.
  for (std::size_t i = 0; stage && i < chunks.size(); ++i) {
    const Answer& a = chunks[i].answer;
    const bool pfs = a.kind == Answer::Kind::kDirect || a.kind == Answer::Kind::kCached;
    if (pfs && no_room_payload(a.payload)) {
      staged.push_back(chunks[i]);
      staged_at.push_back(chunks_at[i]);
    } else if (a.kind == Answer::Kind::kCached && held_elsewhere(chunks[i].key, a.payload)) {
      copied.push_back(chunks[i]);
      copied_at.push_back(chunks_at[i]);
    }
  }
  if (!staged.empty() && !closing()) stage_chunks(staged, staged_at);
  if (!copied.empty() && !closing()) stage_copies(copied, copied_at);
  for (const Again& a : again) {
    if (stage_->holds(a.key, a.version)) stage_->expect(a.key, a.at);
  }
  for (const BulkItem& it : chunks) {
    if (it.answer.kind != Answer::Kind::kCached) continue;
    const auto rec = unpack<ChunkRecord>(it.answer.payload);
    if (rec.owner < 0 || !on_this_node(rec.owner)) continue;  // not ready on this node
    stats_.add(Counter::prefetch_chunks);
    stats_.add(Counter::prefetch_bytes, rec.length);
    if (it.answer.fresh) stats_.add(Counter::prefetch_loaded_bytes, rec.length);
  }
  if (!fits) stats_.add(Counter::prefetch_no_room);
  return fits;
}

void Cache::stage_chunks(std::span<const BulkItem> items,
                         std::span<const PrefetchStage::Place> places) {
  std::vector<std::size_t> loads;
  PrefetchStage::Dropped evicted;  // staged chunks used later, dropped to make room
  for (std::size_t i = 0; i < items.size(); ++i) {
    const BulkItem& it = items[i];
    const std::uint64_t length = ChunkGeometry{it.size, config_.chunk_size}.chunk_length(it.index);
    if (length == 0) continue;
    const PrefetchStage::Reserved r =
        stage_->reserve(it.key, it.version, length, places[i], &evicted);
    if (r == PrefetchStage::Reserved::kFull) {  // the rest is read on demand
      stats_.add(Counter::prefetch_stage_full);
      break;
    }
    if (r == PrefetchStage::Reserved::kYes) loads.push_back(i);
  }
  stats_.add(Counter::prefetch_evicted_chunks, evicted.chunks);
  stats_.add(Counter::prefetch_evicted_bytes, evicted.bytes);
  load_all(loads.size(), [&](std::size_t u) {
    const BulkItem& it = items[loads[u]];
    const std::uint64_t length = ChunkGeometry{it.size, config_.chunk_size}.chunk_length(it.index);
    std::unique_ptr<std::byte[]> bytes;
    try {
      bytes = std::make_unique_for_overwrite<std::byte[]>(length);
      auto n = pfs_.read(it.path, it.version, it.index * config_.chunk_size,
                         std::span(bytes.get(), length));
      if (!n.ok() || *n != length) bytes.reset();  // its read goes to the PFS itself
    } catch (const std::exception& e) {
      LARDER_LOG_LIMITED(kWarn, "staging a chunk of {} failed: {}", it.path, e.what());
      bytes.reset();
    }
    if (bytes != nullptr) {
      stats_.add(Counter::prefetch_staged_chunks);
      stats_.add(Counter::prefetch_staged_bytes, length);
    }
    stage_->fill(it.key, std::move(bytes));
  });
}

bool Cache::held_elsewhere(const Key& key, const Payload& payload) {
  const auto record = unpack<ChunkRecord>(payload);
  if (record.owner < 0 || on_this_node(record.owner) || transport_ == nullptr) return false;
  if (node_ == nullptr) return true;
  // Another rank of this node may have copied it meanwhile: its reads find that copy.
  const NodeTable::Found f = node_->find(key);
  if (f.outcome != NodeTable::Found::Outcome::kReady) return true;
  const auto here = unpack<ChunkRecord>(f.payload);
  return here.owner < 0 || !on_this_node(here.owner);
}

void Cache::stage_copies(std::span<const BulkItem> items,
                         std::span<const PrefetchStage::Place> places) {
  std::vector<Transport::GetOp> ops;
  std::vector<const BulkItem*> of;
  std::vector<std::unique_ptr<std::byte[]>> buffers;
  std::vector<Transport::Hashed> arrived(items.size());  // never reallocated: ops point into it
  PrefetchStage::Dropped evicted;  // staged chunks used later, dropped to make room
  for (std::size_t i = 0; i < items.size(); ++i) {
    const BulkItem& it = items[i];
    const auto origin = unpack<ChunkRecord>(it.answer.payload);
    if (origin.length == 0 || (origin.version != 0 && origin.version != it.version)) continue;
    if (origin.tier == Tier::kFile && !learn_segment(origin.owner, origin.segment).ok()) continue;
    const PrefetchStage::Reserved r =
        stage_->reserve(it.key, it.version, origin.length, places[i], &evicted);
    if (r == PrefetchStage::Reserved::kFull) {  // the rest is read on demand
      stats_.add(Counter::prefetch_stage_full);
      break;
    }
    if (r != PrefetchStage::Reserved::kYes) continue;
    std::unique_ptr<std::byte[]> bytes;
    try {
      bytes = std::make_unique_for_overwrite<std::byte[]>(origin.length);
    } catch (const std::bad_alloc&) {
      stage_->fill(it.key, nullptr);  // its read copies it itself
      continue;
    }
    ops.push_back(
        Transport::GetOp{origin.owner,
                         origin.tier,
                         origin.segment,
                         origin.offset,
                         std::span(bytes.get(), origin.length),
                         config_.verify && origin.hash != 0 ? &arrived[ops.size()] : nullptr,
                         {origin.offset, origin.length, origin.hash}});
    of.push_back(&it);
    buffers.push_back(std::move(bytes));
  }
  stats_.add(Counter::prefetch_evicted_chunks, evicted.chunks);
  stats_.add(Counter::prefetch_evicted_bytes, evicted.bytes);
  if (ops.empty()) return;
  std::vector<Status> got(ops.size());
  timed_get_many(ops, got);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const BulkItem& it = *of[k];
    bool good = got[k].ok();
    if (!good && got[k].native_code() != EBADMSG) {
      stats_.add(Counter::transport_errors);
      LARDER_LOG_LIMITED(kWarn, "{} get of {} bytes from rank {} failed: {}", transport_->name(),
                         ops[k].into.size(), ops[k].owner, got[k].to_string());
    }
    if (good) {
      stats_.add(Counter::transport_bytes, ops[k].into.size());
      const CachedFile file{it.path, it.file, it.size, it.version};
      const ChunkContext context(file, it.index);
      good = verified(ops[k].into, ops[k].chunk.hash, ops[k].owner, "another node's copy",
                      ops[k].hashed);
    }
    if (!good) {  // its read goes the usual way (and copes with a bad copy there)
      stage_->fill(it.key, nullptr);
      continue;
    }
    if (load_ != nullptr) load_->fetched(ops[k].owner, ops[k].into.size());
    stats_.add(Counter::prefetch_copied_chunks);
    stats_.add(Counter::prefetch_copied_bytes, ops[k].into.size());
    stage_->fill(it.key, std::move(buffers[k]), true);
  }
}

void Cache::prefetch_published(const Key& key) {
  if (in_flight_n_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(in_flight_mu_);
  if (in_flight_.erase(key) != 0) in_flight_n_.store(in_flight_.size(), std::memory_order_relaxed);
}

void Cache::prefetch_claimed(std::span<const BulkItem> chunks, bool claimed) {
  if (chunks.empty()) return;
  std::lock_guard lock(in_flight_mu_);
  for (const BulkItem& it : chunks) {
    if (claimed) {
      in_flight_.insert(it.key);
    } else {
      in_flight_.erase(it.key);
    }
  }
  in_flight_n_.store(in_flight_.size(), std::memory_order_relaxed);
}

}  // namespace larder
