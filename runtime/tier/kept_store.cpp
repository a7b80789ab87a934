#include "runtime/tier/kept_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_set>

#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/tier/job_dir.hpp"

namespace larder {

namespace {

// A step's stat answers and listings (`answers-<rank>`, written by keep_rank).
bool is_answers_file(const std::string& path) {
  return path.substr(path.rfind('/') + 1).starts_with("answers-");
}

constexpr char kIndexMagic[8] = {'L', 'R', 'D', 'K', 'I', 'D', 'X', '1'};
constexpr char kTableMagic[8] = {'L', 'R', 'D', 'K', 'T', 'A', 'B', '2'};
constexpr char kProducedMagic[8] = {'L', 'R', 'D', 'K', 'P', 'R', 'D', '1'};

// produced-<rank>: this header, then per file: u16 path length, u16 canonical length, u32 answer
// length, the path, the canonical path, the answer.
struct ProducedHeader {
  char magic[8];
  std::uint64_t files = 0;
  std::uint64_t body_hash = 0;  // XXH3-64 of everything after the header
};

struct IndexHeader {
  char magic[8];
  std::uint32_t files = 0;
  std::uint32_t reserved = 0;
  std::uint64_t records = 0;
  std::uint64_t body_hash = 0;  // XXH3-64 of everything after the header
};

// The table a step maps (KeptStore::open): this header; `capacity` (a power of two, at least
// twice `count`) 32-bit slots, each 0 (empty) or 1 + the index of a record; the `count` records,
// dense; the files and their names.
struct TableHeader {
  char magic[8];
  std::uint64_t capacity = 0;
  std::uint64_t count = 0;
  std::uint64_t files = 0;
  std::uint64_t mem_bytes = 0;
  std::uint64_t disk_bytes = 0;
  std::uint64_t names_bytes = 0;
  std::uint64_t reserved = 0;
};
static_assert(sizeof(TableHeader) == 64);

struct TableFile {
  std::uint64_t bytes = 0;
  std::uint32_t name_length = 0;
  std::uint8_t disk = 0;
  std::uint8_t pad[3] = {};
};
static_assert(sizeof(TableFile) == 16);

// A directory of this user, not a link, not open to others.
bool private_dir(const std::string& path, struct stat* st) {
  return sys::lstat(path.c_str(), st) == 0 && S_ISDIR(st->st_mode) && st->st_uid == ::geteuid() &&
         (st->st_mode & 077) == 0;
}

// Creates `path` as a 0700 directory of this user, or checks that the existing one is.
Status ensure_kept_dir(const std::string& path) {
  if (sys::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return from_errno(errno, "cannot create directory " + path);
  }
  struct stat st {};
  if (!private_dir(path, &st)) {
    return {Errc::kInvalidArgument, EPERM,
            path + " is not a private directory of this user: the kept store is not used"};
  }
  return {};
}

// Opens a regular file of this user without following a link; invalid on anything else.
UniqueFd open_own(const std::string& path, int flags, struct stat* st) {
  UniqueFd fd(sys::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return fd;
  if (sys::fstat(fd.get(), st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != ::geteuid()) {
    return UniqueFd{};
  }
  return fd;
}

std::uint64_t allocated(const struct stat& st) {
  return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// Whether a job of this user is running on the node: its lock is held.
bool job_running(const std::string& shm_base, const std::string& job) {
  const std::string lock = shm_base + "/" + job + ".lock";
  UniqueFd fd(sys::open(lock.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return false;
  return sys::flock(fd.get(), LOCK_EX | LOCK_NB) != 0;
}

std::uint64_t tree_bytes(const std::string& path) {
  struct stat st {};
  if (sys::lstat(path.c_str(), &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return S_ISREG(st.st_mode) ? allocated(st) : 0;
  std::uint64_t n = 0;
  for (const std::string& name : list_dir(path)) n += tree_bytes(child(path, name));
  return n;
}

Status write_file(const std::string& path, std::span<const std::byte> bytes) {
  const std::string tmp = path + ".tmp";
  UniqueFd fd(sys::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return from_errno(errno, "cannot create " + tmp);
  if (sys::write_full(fd.get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    const int e = errno;
    sys::unlink(tmp.c_str());
    return from_errno(e, "cannot write " + tmp);
  }
  fd.reset();
  if (sys::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    sys::unlink(tmp.c_str());
    return from_errno(e, "cannot rename " + tmp);
  }
  return {};
}

template <class T>
void append(std::vector<std::byte>& out, const T& value) {
  const std::size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

// Walks an index's file list (`names`, after the header: per file a disk flag byte, a zero byte, a
// u16 length and the name), calling see(offset of the flag in the index, disk, name) for each of
// `files`; false when the list is malformed, when a name is not a plain file name, or when `see`
// says stop. `whole`: the list must end exactly at the end of `names`.
template <class See>
bool walk_file_list(std::span<const std::byte> names, std::uint64_t files, bool whole, See&& see) {
  std::size_t at = 0;
  for (std::uint64_t i = 0; i < files; ++i) {
    if (at + 4 > names.size()) return false;
    const std::uint64_t flag_at = sizeof(IndexHeader) + at;
    const bool disk = names[at] != std::byte{0};
    std::uint16_t length = 0;
    std::memcpy(&length, names.data() + at + 2, 2);
    at += 4;
    if (at + length > names.size()) return false;
    const std::string_view name(reinterpret_cast<const char*>(names.data() + at), length);
    at += length;
    if (name.empty() || name.find('/') != std::string_view::npos || name[0] == '.') return false;
    if (!see(flag_at, disk, name)) return false;
  }
  return !whole || at == names.size();
}

// One finished step as prepare() reads it.
struct Step {
  std::string name;
  std::int64_t completed_ns = 0;
  struct FileSeen {
    std::string path;
    bool disk = false;
    bool usable = false;
    std::uint64_t bytes = 0;
    std::int64_t used_ns = 0;
    std::string index;          // the index that names it
    std::uint64_t flag_at = 0;  // where in that index its disk flag is
  };
  std::vector<FileSeen> files;
  std::vector<KeptRecord> records;  // `file`: the index in `files`
};

// Reads one index file into `step`; false when it is not whole (the step is then dropped). The
// records are read straight into the step's array (an ImageNet-sized index is 82 MB: one copy,
// not a buffer and a copy), checked with the index's hash as they are.
bool read_index(const std::string& path, const KeptPlace& place, Step& step) {
  struct stat st {};
  UniqueFd fd = open_own(path, O_RDONLY, &st);
  if (!fd.valid() || st.st_size < static_cast<off_t>(sizeof(IndexHeader))) return false;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  IndexHeader h;
  if (sys::pread_full(fd.get(), &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) return false;
  if (std::memcmp(h.magic, kIndexMagic, sizeof h.magic) != 0) return false;
  const std::uint64_t body_size = size - sizeof h;
  if (h.records > body_size / sizeof(KeptRecord)) return false;
  const std::uint64_t record_bytes = h.records * sizeof(KeptRecord);
  const std::uint64_t names_size = body_size - record_bytes;
  std::vector<std::byte> names(names_size);
  const std::size_t old = step.records.size();
  step.records.resize(old + h.records);
  auto* records = reinterpret_cast<std::byte*>(step.records.data() + old);
  if (sys::pread_full(fd.get(), names.data(), names_size, sizeof h) !=
          static_cast<ssize_t>(names_size) ||
      sys::pread_full(fd.get(), records, record_bytes, static_cast<off_t>(sizeof h + names_size)) !=
          static_cast<ssize_t>(record_bytes)) {
    return false;
  }
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  if (state == nullptr || XXH3_64bits_reset(state.get()) != XXH_OK ||
      XXH3_64bits_update(state.get(), names.data(), names.size()) != XXH_OK ||
      XXH3_64bits_update(state.get(), records, record_bytes) != XXH_OK ||
      XXH3_64bits_digest(state.get()) != h.body_hash) {
    return false;
  }
  const std::size_t first = step.files.size();
  const bool listed = walk_file_list(
      names, h.files, true, [&](std::uint64_t flag_at, bool disk, std::string_view name) {
        Step::FileSeen f;
        f.index = path;
        f.flag_at = flag_at;
        f.disk = disk;
        const std::string root = f.disk ? place.disk_root() : place.shm_root();
        if (root.empty()) return false;
        f.path = child(child(root, step.name), name);
        struct stat fst {};
        // A regular file of this user, not a link: anything else is not read.
        f.usable = sys::lstat(f.path.c_str(), &fst) == 0 && S_ISREG(fst.st_mode) &&
                   fst.st_uid == ::geteuid();
        if (f.usable) {
          f.bytes = allocated(fst);
          f.used_ns = mtime_ns(fst);
        }
        step.files.push_back(std::move(f));
        return true;
      });
  if (!listed) return false;
  for (std::size_t k = old; k < step.records.size(); ++k) {
    KeptRecord& r = step.records[k];
    if (r.file >= h.files || r.word == 0) return false;
    r.file += static_cast<std::uint32_t>(first);
    r.segment = 0;  // prepare()'s mark (kDead) starts clear
  }
  return true;
}

// Open addressing over 32-bit slots (0: empty, else 1 + an index into `records`), keyed by
// the records' words (already XXH3 hashes): the step's lookup table, and prepare()'s set of live
// keys. Capacity: a power of two, at least twice the records.
std::uint64_t table_capacity(std::uint64_t records) {
  std::uint64_t capacity = 64;
  while (capacity < 2 * records) capacity *= 2;
  return capacity;
}

// The slot of `word`/`check` in `slots`: its record's, or the empty one where it would go.
template <class RecordAt>
std::uint64_t slot_of(std::span<const std::uint32_t> slots, std::uint64_t word, std::uint64_t check,
                      const RecordAt& record_at) {
  const std::uint64_t mask = slots.size() - 1;
  for (std::uint64_t i = word & mask;; i = (i + 1) & mask) {
    const std::uint32_t at = slots[i];
    if (at == 0) return i;
    const KeptRecord& r = record_at(at - 1);
    if (r.word == word && r.check == check) return i;
  }
}

// Copies kept file `from` to `to` (a new 0600 file of this user), leaving blocks of zeros as
// holes (kept arenas are sparse), with `from`'s modification time (its last use). Returns the
// bytes `to` allocates.
Result<std::uint64_t> copy_sparse(const std::string& from, const std::string& to) {
  struct stat st {};
  UniqueFd in = open_own(from, O_RDONLY, &st);
  if (!in.valid()) return from_errno(errno != 0 ? errno : EPERM, "cannot open " + from);
  UniqueFd out(sys::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out.valid()) return from_errno(errno, "cannot create " + to);
  constexpr std::size_t kBlock = 1 << 20;
  std::vector<std::byte> block(kBlock);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  Status failed;
  for (std::uint64_t at = 0; at < size && failed.ok(); at += kBlock) {
    const std::size_t n = std::min<std::uint64_t>(kBlock, size - at);
    if (sys::pread_full(in.get(), block.data(), n, static_cast<off_t>(at)) !=
        static_cast<ssize_t>(n)) {
      failed = from_errno(errno != 0 ? errno : EIO, "cannot read " + from);
      break;
    }
    const bool zeros = std::all_of(block.begin(), block.begin() + static_cast<std::ptrdiff_t>(n),
                                   [](std::byte b) { return b == std::byte{0}; });
    if (!zeros && sys::pwrite(out.get(), block.data(), n, static_cast<off_t>(at)) !=
                      static_cast<ssize_t>(n)) {
      failed = from_errno(errno != 0 ? errno : EIO, "cannot write " + to);
    }
  }
  struct stat done {};
  if (failed.ok() && (sys::ftruncate(out.get(), static_cast<off_t>(size)) != 0 ||
                      sys::fstat(out.get(), &done) != 0)) {
    failed = from_errno(errno, "cannot finish " + to);
  }
  if (!failed.ok()) {
    out.reset();
    sys::unlink(to.c_str());
    return failed;
  }
  const timespec times[2] = {st.st_atim, st.st_mtim};
  (void)::futimens(out.get(), times);
  return allocated(done);
}

// Sets the disk flag of the files at `flags` (offsets) of index `path`, and its hash.
Status mark_on_disk(const std::string& path, const std::vector<std::uint64_t>& flags) {
  struct stat st {};
  UniqueFd fd = open_own(path, O_RDONLY, &st);
  if (!fd.valid() || st.st_size < static_cast<off_t>(sizeof(IndexHeader))) {
    return from_errno(errno != 0 ? errno : EINVAL, "cannot open " + path);
  }
  std::vector<std::byte> bytes(static_cast<std::size_t>(st.st_size));
  if (sys::pread_full(fd.get(), bytes.data(), bytes.size(), 0) !=
      static_cast<ssize_t>(bytes.size())) {
    return from_errno(errno != 0 ? errno : EIO, "cannot read " + path);
  }
  IndexHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  // Never a new hash over bytes that no longer match the old one.
  if (std::memcmp(h.magic, kIndexMagic, sizeof h.magic) != 0 ||
      XXH3_64bits(bytes.data() + sizeof h, bytes.size() - sizeof h) != h.body_hash) {
    return {Errc::kIoError, EBADMSG, path + " is not a whole index"};
  }
  for (const std::uint64_t at : flags) {
    if (at >= bytes.size()) return {Errc::kInvalidArgument, 0, path + " changed"};
    bytes[at] = std::byte{1};
  }
  h.body_hash = XXH3_64bits(bytes.data() + sizeof h, bytes.size() - sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
  return write_file(path, bytes);
}

// Removes other stores of this user that nobody uses: other allocations' (when this store is an
// allocation's) and any unused for `ttl`.
int remove_other_stores(const KeptPlace& place, std::chrono::seconds ttl) {
  int removed = 0;
  const std::string own = "keep-" + place.name;
  const bool allocation = place.name.starts_with("alloc-");
  const auto now = static_cast<std::int64_t>(::time(nullptr));
  for (const std::string& entry : list_dir(place.shm_base)) {
    if (!entry.starts_with("keep-") || entry.ends_with(".lock") || entry.ends_with(".inuse") ||
        entry == own) {
      continue;
    }
    const std::string dir = place.shm_base + "/" + entry;
    struct stat st {};
    if (!private_dir(dir, &st)) continue;  // not ours to read or remove
    const bool other_allocation = allocation && entry.starts_with("keep-alloc-");
    const bool expired = now - static_cast<std::int64_t>(st.st_mtim.tv_sec) > ttl.count();
    if (!other_allocation && !expired) continue;
    const std::string in_use = dir + ".inuse";
    UniqueFd fd(sys::open(in_use.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid() || sys::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // in use
    remove_tree(dir);
    if (!place.disk_base.empty()) remove_tree(place.disk_base + "/" + entry);
    sys::unlink((dir + ".lock").c_str());
    sys::unlink(in_use.c_str());
    ++removed;
    LARDER_LOG_INFO("removed kept store {} ({})", entry,
                    other_allocation ? "another allocation's" : "unused past LARDER_KEEP_TTL");
  }
  return removed;
}

}  // namespace

int KeptStore::sweep(const std::string& shm_base, const std::string& disk_base,
                     std::chrono::seconds ttl) noexcept {
  try {
    KeptPlace place;
    place.shm_base = shm_base;
    place.disk_base = disk_base;
    return remove_other_stores(place, ttl);  // no store of its own: only expired ones go
  } catch (...) {
    return 0;
  }
}

void KeptStore::touch(const std::string& path) noexcept {
  (void)::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

void KeptStore::evict(const File& file) noexcept {
  // Its pages go now, whoever maps it (the mappings stay valid and read zeros); then its name.
  UniqueFd fd(sys::open(file.path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (fd.valid() && sys::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      sys::fallocate(fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size) != 0) {
    LARDER_LOG_INFO("cannot free the pages of kept file {}: {}", file.path, log::errno_text(errno));
  }
  if (sys::unlink(file.path.c_str()) != 0 && errno != ENOENT) {
    LARDER_LOG_WARN("cannot remove kept file {}: {}", file.path, log::errno_text(errno));
  }
}

namespace {

// Where in index `index` the disk flag of memory file `name` is (0: it names no such file). Reads
// the index's file list only; mark_on_disk checks the whole index's hash before it changes it.
std::uint64_t memory_flag_of(const std::string& index, const std::string& name) {
  struct stat st {};
  UniqueFd fd = open_own(index, O_RDONLY, &st);
  IndexHeader h;
  if (!fd.valid() || st.st_size < static_cast<off_t>(sizeof h) ||
      sys::pread_full(fd.get(), &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) ||
      std::memcmp(h.magic, kIndexMagic, sizeof h.magic) != 0) {
    return 0;
  }
  const std::uint64_t body = static_cast<std::uint64_t>(st.st_size) - sizeof h;
  if (h.records > body / sizeof(KeptRecord)) return 0;
  std::vector<std::byte> names(body - h.records * sizeof(KeptRecord));
  if (sys::pread_full(fd.get(), names.data(), names.size(), sizeof h) !=
      static_cast<ssize_t>(names.size())) {
    return 0;
  }
  std::uint64_t found = 0;
  walk_file_list(names, h.files, false, [&](std::uint64_t flag_at, bool disk, std::string_view n) {
    if (!disk && n == name) found = flag_at;
    return found == 0;  // stop at the file
  });
  return found;
}

}  // namespace

Result<std::uint64_t> KeptStore::demote(const File& file) const {
  if (file.disk || file.answers) return Status(Errc::kInvalidArgument, EINVAL, "not a memory file");
  if (place_.disk_root().empty()) return Status(Errc::kUnavailable, 0, "no disk tier");
  // <shm root>/<step>/<name>, name arena-<rank>.mem or seg-<rank>-<id>: its index is
  // <shm root>/<step>/index-<rank>.
  const std::string root = place_.shm_root() + "/";
  const std::size_t slash = file.path.rfind('/');
  if (!file.path.starts_with(root) || slash == std::string::npos || slash < root.size()) {
    return Status(Errc::kInvalidArgument, EINVAL, file.path + " is not in the kept store");
  }
  const std::string step = file.path.substr(root.size(), slash - root.size());
  const std::string name = file.path.substr(slash + 1);
  std::string rank;
  if (name.starts_with("arena-") && name.ends_with(".mem")) {
    rank = name.substr(6, name.size() - 10);
  } else if (name.starts_with("seg-")) {
    rank = name.substr(4, name.find('-', 4) - 4);
  }
  if (rank.empty() || step.find('/') != std::string::npos) {
    return Status(Errc::kInvalidArgument, EINVAL, file.path + " is not a kept file");
  }
  const std::string step_dir = child(place_.shm_root(), step);
  const std::string index = child(step_dir, "index-" + rank);
  // The store's lock shared, not waited for: a step preparing or closing holds it exclusively
  // and rewrites indexes. Then the step directory's lock exclusive: the node's ranks moving files
  // of one step take turns, each for one file's copy and its index's rewrite.
  const std::string lock_path = place_.shm_base + "/keep-" + place_.name + ".lock";
  UniqueFd lock(sys::open(lock_path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!lock.valid() || sys::flock(lock.get(), LOCK_SH | LOCK_NB) != 0) {
    return Status(Errc::kUnavailable, errno, "the kept store is being prepared or closed");
  }
  UniqueFd turn(sys::open(step_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!turn.valid() || sys::flock(turn.get(), LOCK_EX) != 0) {
    return from_errno(errno, "cannot lock " + step_dir);
  }
  const std::uint64_t flag_at = memory_flag_of(index, name);
  if (flag_at == 0) return Status(Errc::kIoError, EINVAL, index + " does not name " + name);
  const std::string dir = child(place_.disk_root(), step);
  for (const std::string& d :
       {place_.disk_base + "/keep-" + place_.name, place_.disk_root(), dir}) {
    if (Status s = ensure_kept_dir(d); !s.ok()) return s;
  }
  const std::string to = child(dir, name);
  auto copied = copy_sparse(file.path, to);
  if (!copied.ok()) return copied.status();
  if (Status s = mark_on_disk(index, {flag_at}); !s.ok()) {
    sys::unlink(to.c_str());  // the index still names the memory copy, which stays
    return s;
  }
  evict(file);
  return *copied;
}

Result<KeptPrepared> KeptStore::prepare(const KeptPlace& place, const std::string& job,
                                        std::uint64_t mem_budget, std::uint64_t disk_budget,
                                        std::chrono::seconds ttl) {
  KeptPrepared out;
  const std::string store = place.shm_base + "/keep-" + place.name;
  if (Status s = ensure_kept_dir(store); !s.ok()) return s;
  if (Status s = ensure_kept_dir(place.shm_root()); !s.ok()) return s;
  if (!place.disk_base.empty()) {
    if (Status s = ensure_kept_dir(place.disk_base + "/keep-" + place.name); !s.ok()) return s;
    if (Status s = ensure_kept_dir(place.disk_root()); !s.ok()) return s;
  }
  const std::string lock_path = store + ".lock";
  UniqueFd lock(sys::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock.valid()) return from_errno(errno, "cannot open " + lock_path);
  if (sys::flock(lock.get(), LOCK_EX) != 0) return from_errno(errno, "cannot lock " + lock_path);
  touch(store);
  out.stores_removed = remove_other_stores(place, ttl);

  // The finished steps, newest first; unfinished ones of ended jobs go.
  std::vector<Step> steps;
  const std::string root = place.shm_root();
  for (const std::string& name : list_dir(root)) {
    const std::string dir = child(root, name);
    if (name.starts_with("table-")) {
      // A table of a job that is not running any more (it ended without removing it).
      if (!job_running(place.shm_base, name.substr(6))) sys::unlink(dir.c_str());
      continue;
    }
    struct stat st {};
    if (!private_dir(dir, &st)) {
      LARDER_LOG_WARN("kept store: {} is not a private directory of this user; not read", dir);
      continue;
    }
    struct stat done {};
    UniqueFd complete = open_own(dir + "/complete", O_RDONLY, &done);
    if (!complete.valid()) {
      if (job_running(place.shm_base, name)) continue;  // a step that is ending right now
      const std::string disk_dir = place.disk_root().empty() ? "" : place.disk_root() + "/" + name;
      out.unfinished_bytes += tree_bytes(dir) + (disk_dir.empty() ? 0 : tree_bytes(disk_dir));
      remove_tree(dir);
      if (!disk_dir.empty()) remove_tree(disk_dir);
      LARDER_LOG_INFO("kept store: dropped step {}, whose writer did not finish", name);
      continue;
    }
    Step step;
    step.name = name;
    step.completed_ns = mtime_ns(done);
    bool whole = true;
    for (const std::string& entry : list_dir(dir)) {
      if (entry.starts_with("index-") && !entry.ends_with(".tmp")) {
        whole = whole && read_index(child(dir, entry), place, step);
      }
    }
    if (!whole) {
      const std::string disk_dir = place.disk_root().empty() ? "" : place.disk_root() + "/" + name;
      out.unfinished_bytes += tree_bytes(dir) + (disk_dir.empty() ? 0 : tree_bytes(disk_dir));
      remove_tree(dir);
      if (!disk_dir.empty()) remove_tree(disk_dir);
      LARDER_LOG_WARN("kept store: step {} has an index that is not whole; dropped", name);
      continue;
    }
    steps.push_back(std::move(step));
  }
  std::sort(steps.begin(), steps.end(),
            [](const Step& a, const Step& b) { return a.completed_ns > b.completed_ns; });

  // Every key once, from the newest step that holds it in a usable file. Records stay where
  // they were read; `seen` (open addressing) holds 1 + a record's place among all the steps'
  // records taken in order (newest step first). An older record of a key already seen, or one
  // in a file that cannot be read, is marked dead. No copy of the records is made: on this
  // machine memory touched for the first time costs about 5 ms per MB, more than the work.
  constexpr std::uint32_t kDead = 1;  // in `segment`, while preparing (read_index clears it)
  std::uint64_t total = 0;
  std::vector<std::uint64_t> starts;
  for (const Step& step : steps) {
    starts.push_back(total);
    total += step.records.size();
  }
  if (total >= std::numeric_limits<std::uint32_t>::max() / 2) {
    return Status(Errc::kNoSpace, 0, "a kept store of more than 2^31 records");
  }
  const auto record_at = [&](std::uint64_t g) -> KeptRecord& {
    const auto s = static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), g) -
                                            starts.begin() - 1);
    return steps[s].records[g - starts[s]];
  };
  std::vector<std::uint32_t> seen(table_capacity(total), 0);
  const std::uint64_t seen_mask = seen.size() - 1;
  std::uint64_t dead = 0;
  std::vector<std::vector<std::uint64_t>> live_count(steps.size());
  for (std::size_t s = 0; s < steps.size(); ++s) {
    live_count[s].assign(steps[s].files.size(), 0);
    std::vector<KeptRecord>& records = steps[s].records;
    for (std::size_t j = 0; j < records.size(); ++j) {
      // The slots are visited in the words' (random) order: ask for a later one's line now.
      constexpr std::size_t kAhead = 16;
      if (j + kAhead < records.size()) {
        __builtin_prefetch(&seen[records[j + kAhead].word & seen_mask]);
      }
      KeptRecord& r = records[j];
      if (!steps[s].files[r.file].usable) {
        r.segment = kDead;
        ++dead;
        continue;
      }
      const std::uint64_t i = slot_of(seen, r.word, r.check, record_at);
      if (seen[i] == 0) {
        seen[i] = static_cast<std::uint32_t>(starts[s] + j + 1);
        ++live_count[s][r.file];
        continue;
      }
      KeptRecord& newer = record_at(seen[i] - 1);
      // This node was the chunk's origin (or a stand-in for it) in an older step: it still
      // publishes it at a start.
      if (newer.version == r.version) newer.flags |= r.flags & KeptRecord::kPublished;
      r.segment = kDead;
      ++dead;
    }
  }
  // Files nothing needs (a newer step holds every key of theirs) go; then the least recently
  // used until each tier is within its budget.
  struct Candidate {
    std::size_t step;
    std::size_t file;
  };
  std::vector<Candidate> kept;
  bool dropped_live = false;  // a file some live record names went: the table is built again
  auto drop_file = [&](std::size_t s, std::size_t f) {
    dropped_live = dropped_live || live_count[s][f] > 0;
    Step::FileSeen& file = steps[s].files[f];
    // Counted when it held something: a file whose every record a newer step kept again (its
    // answers checked anew, its chunks read again) is replaced, not lost for room.
    if (live_count[s][f] > 0) out.evicted_bytes += file.bytes;
    evict(File{file.path, file.disk, false, file.bytes});
    file.usable = false;
  };
  std::uint64_t mem = 0;
  std::uint64_t disk = 0;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    for (std::size_t f = 0; f < steps[s].files.size(); ++f) {
      Step::FileSeen& file = steps[s].files[f];
      if (!file.usable) continue;
      if (live_count[s][f] == 0) {
        drop_file(s, f);
        continue;
      }
      kept.push_back({s, f});
      (file.disk ? disk : mem) += file.bytes;
    }
  }
  std::sort(kept.begin(), kept.end(), [&](const Candidate& a, const Candidate& b) {
    return steps[a.step].files[a.file].used_ns < steps[b.step].files[b.file].used_ns;
  });
  // A memory file over the budget goes to the disk tier first, where there is one and it has
  // room (copied, then its index says so, then the memory copy goes); else it is dropped.
  struct Demoted {
    std::size_t step;
    std::size_t file;
    std::string from;
    std::uint64_t bytes;  // what it cost in memory
  };
  std::vector<Demoted> demoted;
  // Stat answers and listings (answers files) stay in memory and go last: they are small, and
  // each holds the answers of thousands of paths; the data files go to the disk tier first.
  std::vector<Candidate> order;
  for (const bool answers : {false, true}) {
    for (const Candidate& c : kept) {
      if (is_answers_file(steps[c.step].files[c.file].path) == answers) order.push_back(c);
    }
  }
  for (const Candidate& c : order) {
    Step::FileSeen& file = steps[c.step].files[c.file];
    std::uint64_t& total = file.disk ? disk : mem;
    const std::uint64_t budget = file.disk ? disk_budget : mem_budget;
    if (total <= budget) continue;
    const std::string name = file.path.substr(file.path.rfind('/') + 1);
    if (!file.disk && !place.disk_root().empty() && disk + file.bytes <= disk_budget &&
        !is_answers_file(file.path)) {
      const std::string dir = child(place.disk_root(), steps[c.step].name);
      const std::string to = child(dir, name);
      const Status made = ensure_kept_dir(dir);
      Result<std::uint64_t> copied =
          made.ok() ? copy_sparse(file.path, to) : Result<std::uint64_t>(made);
      if (copied.ok()) {
        demoted.push_back({c.step, c.file, file.path, file.bytes});
        mem -= file.bytes;
        disk += *copied;
        file.path = to;
        file.disk = true;
        file.bytes = *copied;
        continue;
      }
      LARDER_LOG_INFO("kept file {} cannot go to the disk tier: {}", file.path,
                      copied.status().message());
    }
    total -= file.bytes;
    drop_file(c.step, c.file);
  }
  if (!demoted.empty()) {
    std::map<std::string, std::vector<std::uint64_t>> flags;  // index -> disk flags to set
    for (const Demoted& d : demoted) {
      const Step::FileSeen& f = steps[d.step].files[d.file];
      flags[f.index].push_back(f.flag_at);
    }
    for (const auto& [index, at] : flags) {
      const Status s = mark_on_disk(index, at);
      for (const Demoted& d : demoted) {
        Step::FileSeen& f = steps[d.step].files[d.file];
        if (f.index != index) continue;
        if (s.ok()) {
          evict(File{d.from, false, false, d.bytes});  // the memory copy
          out.demoted_bytes += d.bytes;
          continue;
        }
        // The index still names the memory copy: neither copy is kept.
        LARDER_LOG_WARN("cannot record kept file {} on the disk tier: {}", d.from, s.message());
        evict(File{d.from, false, false, d.bytes});
        disk -= f.bytes;
        dropped_live = true;
        out.evicted_bytes += d.bytes;
        evict(File{f.path, true, false, f.bytes});
        f.usable = false;
      }
    }
  }
  for (const Step& step : steps) {
    bool any = false;
    for (const auto& f : step.files) any = any || f.usable;
    if (!any) {
      remove_tree(child(root, step.name));
      if (!place.disk_root().empty()) remove_tree(child(place.disk_root(), step.name));
    }
  }

  // The table: the usable files, then every live record in an open-addressed array.
  // Numbered least recently used first: the order in which a step evicts them for room.
  std::vector<std::vector<std::uint32_t>> number(steps.size());
  std::vector<const Step::FileSeen*> files;
  for (std::size_t s = 0; s < steps.size(); ++s) number[s].assign(steps[s].files.size(), ~0u);
  for (const Candidate& c : kept) {
    const Step::FileSeen& file = steps[c.step].files[c.file];
    if (!file.usable) continue;
    number[c.step][c.file] = static_cast<std::uint32_t>(files.size());
    files.push_back(&file);
  }
  // The records of the files that stay, renumbered and packed in place, step by step; then
  // their slots. When every record stays (nothing dead, nothing trimmed), the slots that found
  // them are the table as they are.
  std::uint64_t count = 0;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    std::vector<KeptRecord>& records = steps[s].records;
    std::size_t w = 0;
    for (const KeptRecord& r : records) {
      if (r.segment == kDead) continue;
      const std::uint32_t n = number[s][r.file];
      if (n == ~0u) continue;
      KeptRecord& kept_record = records[w++];
      kept_record = r;
      kept_record.file = n;
      kept_record.segment = 0;
    }
    records.resize(w);
    starts[s] = count;
    count += w;
  }
  std::vector<std::uint32_t> slots;
  if (dead == 0 && !dropped_live) {
    slots.swap(seen);
  } else {
    std::vector<std::uint32_t>().swap(seen);
    slots.assign(table_capacity(count), 0);
    for (std::uint64_t g = 0; g < count; ++g) {
      const KeptRecord& r = record_at(g);
      slots[slot_of(slots, r.word, r.check, record_at)] = static_cast<std::uint32_t>(g + 1);
    }
  }
  const std::uint64_t capacity = slots.size();
  TableHeader h;
  std::memcpy(h.magic, kTableMagic, sizeof h.magic);
  h.capacity = capacity;
  h.count = count;
  h.files = files.size();
  h.mem_bytes = mem;
  h.disk_bytes = disk;
  std::vector<std::byte> tail;  // the file entries and their names
  for (const auto* f : files) {
    TableFile tf;
    tf.bytes = f->bytes;
    tf.name_length = static_cast<std::uint32_t>(f->path.size());
    tf.disk = f->disk ? 1 : 0;
    append(tail, tf);
    h.names_bytes += f->path.size();
  }
  for (const auto* f : files) {
    const auto* p = reinterpret_cast<const std::byte*>(f->path.data());
    tail.insert(tail.end(), p, p + f->path.size());
  }
  // Written in pieces (the slots, then each step's records, straight from their arrays), under
  // a temporary name.
  const std::string path = root + "/table-" + job;
  const std::string tmp = path + ".tmp";
  {
    UniqueFd fd(
        sys::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return from_errno(errno, "cannot create " + tmp);
    const std::size_t slot_bytes = slots.size() * sizeof(std::uint32_t);
    bool written =
        sys::write_full(fd.get(), &h, sizeof h) == static_cast<ssize_t>(sizeof h) &&
        sys::write_full(fd.get(), slots.data(), slot_bytes) == static_cast<ssize_t>(slot_bytes);
    for (std::size_t s = 0; s < steps.size() && written; ++s) {
      const std::size_t record_bytes = steps[s].records.size() * sizeof(KeptRecord);
      written = sys::write_full(fd.get(), steps[s].records.data(), record_bytes) ==
                static_cast<ssize_t>(record_bytes);
    }
    if (!written ||
        sys::write_full(fd.get(), tail.data(), tail.size()) != static_cast<ssize_t>(tail.size())) {
      const int e = errno;
      sys::unlink(tmp.c_str());
      return from_errno(e, "cannot write " + tmp);
    }
  }
  if (sys::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    sys::unlink(tmp.c_str());
    return from_errno(e, "cannot rename " + tmp);
  }
  out.mem_bytes = mem;
  out.disk_bytes = disk;
  out.chunks = count;
  return out;
}

Result<std::unique_ptr<KeptStore>> KeptStore::open(const KeptPlace& place, const std::string& job) {
  std::unique_ptr<KeptStore> k(new KeptStore());
  const std::string in_use = place.shm_base + "/keep-" + place.name + ".inuse";
  k->in_use_ = UniqueFd(sys::open(in_use.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!k->in_use_.valid() || sys::flock(k->in_use_.get(), LOCK_SH) != 0) {
    return from_errno(errno, "cannot lock " + in_use);
  }
  const std::string path = place.shm_root() + "/table-" + job;
  struct stat st {};
  UniqueFd fd = open_own(path, O_RDONLY, &st);
  if (!fd.valid()) return from_errno(errno != 0 ? errno : EPERM, "cannot open " + path);
  const auto size = static_cast<std::size_t>(st.st_size);
  TableHeader h;
  if (size < sizeof h) return Status(Errc::kIoError, EINVAL, path + " is not a kept table");
  void* map = sys::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return from_errno(errno, "cannot map " + path);
  k->map_ = map;
  k->map_bytes_ = size;
  std::memcpy(&h, map, sizeof h);
  const std::uint64_t slots_end = sizeof h + h.capacity * sizeof(std::uint32_t);
  const std::uint64_t records_end = slots_end + h.count * sizeof(KeptRecord);
  const std::uint64_t files_end = records_end + h.files * sizeof(TableFile);
  if (std::memcmp(h.magic, kTableMagic, sizeof h.magic) != 0 || h.capacity == 0 ||
      (h.capacity & (h.capacity - 1)) != 0 || h.count * 2 > h.capacity ||
      files_end + h.names_bytes != size) {
    return Status(Errc::kIoError, EINVAL, path + " is not a kept table");
  }
  const auto* base = static_cast<const std::byte*>(map);
  k->slots_ = reinterpret_cast<const std::uint32_t*>(base + sizeof h);
  k->records_ = reinterpret_cast<const KeptRecord*>(base + slots_end);
  k->capacity_ = h.capacity;
  k->count_ = h.count;
  k->mem_bytes_ = h.mem_bytes;
  k->disk_bytes_ = h.disk_bytes;
  std::uint64_t name_at = files_end;
  for (std::uint64_t i = 0; i < h.files; ++i) {
    TableFile tf;
    std::memcpy(&tf, base + records_end + i * sizeof(TableFile), sizeof tf);
    if (name_at + tf.name_length > size) {
      return Status(Errc::kIoError, EINVAL, path + " is not a kept table");
    }
    File f;
    f.path.assign(reinterpret_cast<const char*>(base + name_at), tf.name_length);
    f.disk = tf.disk != 0;
    f.answers = !f.disk && is_answers_file(f.path);
    f.bytes = tf.bytes;
    name_at += tf.name_length;
    k->files_.push_back(std::move(f));
  }
  k->answer_fds_.resize(k->files_.size());
  k->place_ = place;
  return k;
}

KeptStore::~KeptStore() {
  if (map_ != nullptr) sys::munmap(map_, map_bytes_);
}

const KeptRecord* KeptStore::find(const Key& key) const noexcept {
  if (capacity_ == 0) return nullptr;
  for (std::uint64_t i = key.word & (capacity_ - 1), n = 0; n < capacity_;
       i = (i + 1) & (capacity_ - 1), ++n) {
    const std::uint32_t at = slots_[i];
    if (at == 0) return nullptr;
    if (at > count_) return nullptr;  // not a table prepare() wrote
    const KeptRecord& r = records_[at - 1];
    if (r.word == key.word && r.check == key.check) {
      return r.file < files_.size() ? &r : nullptr;
    }
  }
  return nullptr;
}

bool KeptStore::read_answer(const KeptRecord& r, std::vector<std::byte>* out) const {
  if ((r.flags & KeptRecord::kAnswer) == 0 || r.file >= files_.size() || !files_[r.file].answers)
    return false;
  int fd = -1;
  {
    std::lock_guard lock(answers_mu_);
    UniqueFd& held = answer_fds_[r.file];
    if (!held.valid()) {
      struct stat st {};
      held = open_own(files_[r.file].path, O_RDONLY, &st);
      if (!held.valid()) return false;
    }
    fd = held.get();
  }
  out->resize(r.length);
  return sys::pread_full(fd, out->data(), r.length, static_cast<off_t>(r.offset)) ==
         static_cast<ssize_t>(r.length);
}

Result<std::uint64_t> KeptStore::keep_rank(const KeptPlace& place, const std::string& job, int rank,
                                           std::span<const std::string> files,
                                           std::span<const bool> disk,
                                           std::span<const KeptRecord> records,
                                           std::span<const KeptProduced> produced,
                                           std::span<const std::byte> answers,
                                           std::span<const KeptRecord> answer_records) {
  if (records.empty() && produced.empty() && answer_records.empty()) return std::uint64_t{0};
  const std::string shm_dir = place.shm_root() + "/" + job;
  for (const std::string& dir :
       {place.shm_base + "/keep-" + place.name, place.shm_root(), shm_dir}) {
    if (Status s = ensure_kept_dir(dir); !s.ok()) return s;
  }
  std::string disk_dir;
  std::vector<std::byte> body;
  std::uint64_t kept = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (disk[i] && disk_dir.empty()) {
      if (place.disk_root().empty()) return Status(Errc::kInvalidArgument, 0, "no disk store");
      disk_dir = place.disk_root() + "/" + job;
      for (const std::string& dir :
           {place.disk_base + "/keep-" + place.name, place.disk_root(), disk_dir}) {
        if (Status s = ensure_kept_dir(dir); !s.ok()) return s;
      }
    }
    const std::string& from = files[i];
    const std::string name = from.substr(from.rfind('/') + 1);
    const std::string to = (disk[i] ? disk_dir : shm_dir) + "/" + name;
    if (sys::rename(from.c_str(), to.c_str()) != 0) {
      return from_errno(errno, "cannot move " + from + " into the kept store");
    }
    // Segments of node files are read-only (0400); a later step maps them read-write to expose
    // them to its transport (it never writes them).
    (void)sys::chmod(to.c_str(), 0600);
    struct stat st {};
    if (sys::lstat(to.c_str(), &st) == 0) kept += allocated(st);
    body.push_back(static_cast<std::byte>(disk[i] ? 1 : 0));
    body.push_back(std::byte{0});
    const auto length = static_cast<std::uint16_t>(name.size());
    append(body, length);
    const auto* p = reinterpret_cast<const std::byte*>(name.data());
    body.insert(body.end(), p, p + name.size());
  }
  auto file_count = static_cast<std::uint32_t>(files.size());
  if (!answer_records.empty()) {
    // The answers file sits beside the index, in memory; one more file of the step.
    const std::string name = "answers-" + std::to_string(rank);
    const std::string path = shm_dir + "/" + name;
    if (Status s = write_file(path, answers); !s.ok()) return s;
    struct stat st {};
    if (sys::lstat(path.c_str(), &st) == 0) kept += allocated(st);
    body.push_back(std::byte{0});
    body.push_back(std::byte{0});
    append(body, static_cast<std::uint16_t>(name.size()));
    const auto* p = reinterpret_cast<const std::byte*>(name.data());
    body.insert(body.end(), p, p + name.size());
    ++file_count;
  }
  const auto* raw = reinterpret_cast<const std::byte*>(records.data());
  body.insert(body.end(), raw, raw + records.size() * sizeof(KeptRecord));
  std::uint64_t record_count = records.size();
  for (KeptRecord r : answer_records) {
    if (r.offset + r.length > answers.size()) continue;
    r.file = file_count - 1;
    r.flags = KeptRecord::kAnswer;
    r.version = 0;
    r.segment = 0;
    append(body, r);
    ++record_count;
  }
  IndexHeader h;
  std::memcpy(h.magic, kIndexMagic, sizeof h.magic);
  h.files = file_count;
  h.records = record_count;
  h.body_hash = XXH3_64bits(body.data(), body.size());
  std::vector<std::byte> bytes;
  append(bytes, h);
  bytes.insert(bytes.end(), body.begin(), body.end());
  if (Status s = write_file(shm_dir + "/index-" + std::to_string(rank), bytes); !s.ok()) return s;
  if (!produced.empty()) {
    std::vector<std::byte> list;
    for (const KeptProduced& p : produced) {
      if (p.path.size() > 0xffff || p.canonical.size() > 0xffff) continue;
      append(list, static_cast<std::uint16_t>(p.path.size()));
      append(list, static_cast<std::uint16_t>(p.canonical.size()));
      append(list, static_cast<std::uint32_t>(p.answer.size()));
      for (const std::string* text : {&p.path, &p.canonical}) {
        const auto* c = reinterpret_cast<const std::byte*>(text->data());
        list.insert(list.end(), c, c + text->size());
      }
      list.insert(list.end(), p.answer.begin(), p.answer.end());
    }
    ProducedHeader ph;
    std::memcpy(ph.magic, kProducedMagic, sizeof ph.magic);
    ph.files = produced.size();
    ph.body_hash = XXH3_64bits(list.data(), list.size());
    std::vector<std::byte> out;
    append(out, ph);
    out.insert(out.end(), list.begin(), list.end());
    if (Status s = write_file(shm_dir + "/produced-" + std::to_string(rank), out); !s.ok()) {
      return s;
    }
  }
  return kept;
}

namespace {

// One produced-<rank> list, appended to `out`; false when it is not whole.
bool read_produced(const std::string& path, std::vector<KeptProduced>& out) {
  struct stat st {};
  UniqueFd fd = open_own(path, O_RDONLY, &st);
  if (!fd.valid() || st.st_size < static_cast<off_t>(sizeof(ProducedHeader))) return false;
  std::vector<std::byte> bytes(static_cast<std::size_t>(st.st_size));
  if (sys::pread_full(fd.get(), bytes.data(), bytes.size(), 0) !=
      static_cast<ssize_t>(bytes.size())) {
    return false;
  }
  ProducedHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  const std::byte* body = bytes.data() + sizeof h;
  const std::size_t size = bytes.size() - sizeof h;
  if (std::memcmp(h.magic, kProducedMagic, sizeof h.magic) != 0 ||
      XXH3_64bits(body, size) != h.body_hash) {
    return false;
  }
  std::size_t at = 0;
  for (std::uint64_t i = 0; i < h.files; ++i) {
    std::uint16_t path_length = 0;
    std::uint16_t canonical_length = 0;
    std::uint32_t answer_length = 0;
    if (at + 8 > size) return false;
    std::memcpy(&path_length, body + at, 2);
    std::memcpy(&canonical_length, body + at + 2, 2);
    std::memcpy(&answer_length, body + at + 4, 4);
    at += 8;
    if (size - at < std::size_t{path_length} + canonical_length + answer_length) return false;
    KeptProduced p;
    p.path.assign(reinterpret_cast<const char*>(body + at), path_length);
    at += path_length;
    p.canonical.assign(reinterpret_cast<const char*>(body + at), canonical_length);
    at += canonical_length;
    p.answer.assign(body + at, body + at + answer_length);
    at += answer_length;
    if (p.path.empty() || p.path[0] != '/' || p.canonical.empty() || p.canonical[0] != '/') {
      return false;
    }
    out.push_back(std::move(p));
  }
  return at == size;
}

}  // namespace

std::vector<KeptProduced> KeptStore::produced(const KeptPlace& place) {
  struct Found {
    std::int64_t completed_ns = 0;
    std::vector<KeptProduced> files;
  };
  std::vector<Found> steps;
  const std::string root = place.shm_root();
  for (const std::string& name : list_dir(root)) {
    const std::string dir = child(root, name);
    struct stat st {};
    struct stat done {};
    if (name.starts_with("table-") || !private_dir(dir, &st)) continue;
    if (!open_own(dir + "/complete", O_RDONLY, &done).valid()) continue;
    Found f;
    f.completed_ns = mtime_ns(done);
    for (const std::string& entry : list_dir(dir)) {
      if (!entry.starts_with("produced-") || entry.ends_with(".tmp")) continue;
      std::vector<KeptProduced> list;
      if (read_produced(child(dir, entry), list)) {
        std::move(list.begin(), list.end(), std::back_inserter(f.files));
      } else {
        LARDER_LOG_WARN("kept store: {} is not whole; its produced files are not used",
                        child(dir, entry));
      }
    }
    if (!f.files.empty()) steps.push_back(std::move(f));
  }
  std::sort(steps.begin(), steps.end(),
            [](const Found& a, const Found& b) { return a.completed_ns > b.completed_ns; });
  std::vector<KeptProduced> out;
  std::unordered_set<std::string> seen;
  for (Found& step : steps) {
    for (KeptProduced& p : step.files) {
      if (seen.insert(p.canonical).second) out.push_back(std::move(p));
    }
  }
  return out;
}

Status KeptStore::complete_step(const KeptPlace& place, const std::string& job) {
  const std::string dir = place.shm_root() + "/" + job;
  struct stat st {};
  if (!private_dir(dir, &st)) return {};  // nothing of this step was kept on this node
  const std::string path = dir + "/complete";
  UniqueFd fd(sys::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return from_errno(errno, "cannot create " + path);
  touch(place.shm_base + "/keep-" + place.name);
  return {};
}

void KeptStore::remove_table(const KeptPlace& place, const std::string& job) noexcept {
  const std::string path = place.shm_root() + "/table-" + job;
  sys::unlink(path.c_str());
}

}  // namespace larder
