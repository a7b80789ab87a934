// opendir/readdir/scandir of managed directories, served from the job's listing cache: the
// DIR* handed out is Larder's own object, recognised by the other directory calls.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "runtime/preload/wrap.hpp"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // readdir_r is interposed too

namespace larder::preload {
namespace {

struct ListedDir {
  std::shared_ptr<const Listing> listing;
  std::vector<std::size_t> offsets;
  std::size_t next = 0;
  std::string path;
  int fd = -1;  // dirfd(): a real descriptor of the directory, opened on demand
};

// The DIR* values that are ListedDirs.
class Registry {
 public:
  static Registry& get() {
    static auto* const r = new Registry();  // never deleted
    return *r;
  }
  void add(ListedDir* d) {
    std::lock_guard lock(mu_);
    dirs_.insert(d);
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  ListedDir* find(DIR* d) {
    if (count_.load(std::memory_order_relaxed) == 0) return nullptr;
    auto* p = reinterpret_cast<ListedDir*>(d);
    std::lock_guard lock(mu_);
    return dirs_.count(p) != 0 ? p : nullptr;
  }
  bool remove(ListedDir* d) {
    std::lock_guard lock(mu_);
    if (dirs_.erase(d) == 0) return false;
    count_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }

 private:
  std::mutex mu_;
  std::unordered_set<ListedDir*> dirs_;  // guarded by mu_
  std::atomic<std::size_t> count_{0};    // relaxed: fast "none of ours"
};

ListedDir* ours(DIR* d) noexcept {
  if (!enabled() || d == nullptr) return nullptr;
  try {
    return Registry::get().find(d);
  } catch (...) {
    return nullptr;
  }
}

// The listing of a managed directory; nullopt: not ours. Sets errno for a failed listing.
std::optional<std::shared_ptr<const Listing>> listing_of(FileService& svc, const std::string& abs) {
  auto listing = svc.list(abs);
  if (!listing.ok()) return std::nullopt;
  return *listing;
}

dirent64* entry_at(ListedDir& d, std::size_t i) {
  return reinterpret_cast<dirent64*>(const_cast<std::byte*>(d.listing->records.data()) +
                                     d.offsets[i]);
}

template <class Entry>
int scan(const char* path, Entry*** namelist, int (*filter)(const Entry*),
         int (*compar)(const Entry**, const Entry**),
         int (*real_scan)(const char*, Entry***, int (*)(const Entry*),
                          int (*)(const Entry**, const Entry**))) noexcept {
  return on_path(
      AT_FDCWD, path, [&] { return call(real_scan, path, namelist, filter, compar); },
      [&](FileService& svc, const std::string& abs) -> std::optional<int> {
        auto listing = listing_of(svc, abs);
        if (!listing) return std::nullopt;
        if ((*listing)->error != 0) {
          errno = (*listing)->error;
          return -1;
        }
        std::vector<Entry*> out;
        for (std::size_t off : (*listing)->offsets()) {
          const auto* e = reinterpret_cast<const Entry*>((*listing)->records.data() + off);
          if (filter != nullptr && filter(e) == 0) continue;
          auto* copy = static_cast<Entry*>(std::malloc(e->d_reclen));
          if (copy == nullptr) {
            for (Entry* p : out) std::free(p);
            errno = ENOMEM;
            return -1;
          }
          std::memcpy(copy, e, e->d_reclen);
          out.push_back(copy);
        }
        if (compar != nullptr) {
          std::sort(out.begin(), out.end(), [&](const Entry* a, const Entry* b) {
            return compar(const_cast<const Entry**>(&a), const_cast<const Entry**>(&b)) < 0;
          });
        }
        auto** array = static_cast<Entry**>(
            std::malloc(std::max<std::size_t>(1, out.size()) * sizeof(Entry*)));
        if (array == nullptr) {
          for (Entry* p : out) std::free(p);
          errno = ENOMEM;
          return -1;
        }
        std::copy(out.begin(), out.end(), array);
        *namelist = array;
        return static_cast<int>(out.size());
      });
}

}  // namespace
}  // namespace larder::preload

using namespace larder::preload;  // NOLINT(google-build-using-namespace): wrapper file
using larder::FileService;

extern "C" {

DIR* opendir(const char* path) {
  return on_path(
      AT_FDCWD, path, [&] { return call(real::opendir, path); },
      [&](FileService& svc, const std::string& abs) -> std::optional<DIR*> {
        auto listing = listing_of(svc, abs);
        if (!listing) return std::nullopt;
        if ((*listing)->error != 0) {
          errno = (*listing)->error;
          return static_cast<DIR*>(nullptr);
        }
        auto* d = new ListedDir();
        d->listing = *listing;
        d->offsets = d->listing->offsets();
        d->path = abs;
        Registry::get().add(d);
        return reinterpret_cast<DIR*>(d);
      });
}

struct dirent64* readdir64(DIR* dir) {
  ListedDir* d = ours(dir);
  if (d == nullptr) return call(real::readdir64, dir);
  if (d->next >= d->offsets.size()) return nullptr;
  return entry_at(*d, d->next++);
}

struct dirent* readdir(DIR* dir) {
  static_assert(sizeof(struct dirent) == sizeof(struct dirent64), "dirent and dirent64 differ");
  ListedDir* d = ours(dir);
  if (d == nullptr) return call(real::readdir, dir);
  if (d->next >= d->offsets.size()) return nullptr;
  return reinterpret_cast<struct dirent*>(entry_at(*d, d->next++));
}

int readdir64_r(DIR* dir, struct dirent64* entry, struct dirent64** result) {
  ListedDir* d = ours(dir);
  if (d == nullptr) return call(real::readdir64_r, dir, entry, result);
  if (d->next >= d->offsets.size()) {
    *result = nullptr;
    return 0;
  }
  const dirent64* e = entry_at(*d, d->next++);
  std::memcpy(entry, e, std::min<std::size_t>(e->d_reclen, sizeof *entry));
  *result = entry;
  return 0;
}

int readdir_r(DIR* dir, struct dirent* entry, struct dirent** result) {
  ListedDir* d = ours(dir);
  if (d == nullptr) return call(real::readdir_r, dir, entry, result);
  return readdir64_r(dir, reinterpret_cast<struct dirent64*>(entry),
                     reinterpret_cast<struct dirent64**>(result));
}

int closedir(DIR* dir) {
  ListedDir* d = ours(dir);
  if (d == nullptr || !Registry::get().remove(d)) return call(real::closedir, dir);
  if (d->fd >= 0) call(real::close, d->fd);
  delete d;
  return 0;
}

void rewinddir(DIR* dir) noexcept {
  ListedDir* d = ours(dir);
  if (d == nullptr) {
    if (real::rewinddir != nullptr) real::rewinddir(dir);
    return;
  }
  d->next = 0;
}

long telldir(DIR* dir) noexcept {
  ListedDir* d = ours(dir);
  if (d == nullptr) return call(real::telldir, dir);
  return static_cast<long>(d->next);
}

void seekdir(DIR* dir, long pos) noexcept {
  ListedDir* d = ours(dir);
  if (d == nullptr) {
    if (real::seekdir != nullptr) real::seekdir(dir, pos);
    return;
  }
  d->next = pos < 0 ? 0 : std::min<std::size_t>(static_cast<std::size_t>(pos), d->offsets.size());
}

int dirfd(DIR* dir) noexcept {
  ListedDir* d = ours(dir);
  if (d == nullptr) return call(real::dirfd, dir);
  if (d->fd < 0) {
    ReentryGuard guard;  // a real descriptor of the directory itself (one file system open)
    d->fd = call(real::open, d->path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  return d->fd;
}

int scandir(const char* path, struct dirent*** namelist, int (*filter)(const struct dirent*),
            int (*compar)(const struct dirent**, const struct dirent**)) {
  return scan(path, namelist, filter, compar, real::scandir);
}

int scandir64(const char* path, struct dirent64*** namelist, int (*filter)(const struct dirent64*),
              int (*compar)(const struct dirent64**, const struct dirent64**)) {
  return scan(path, namelist, filter, compar, real::scandir64);
}

}  // extern "C"
