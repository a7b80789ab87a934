#include "hdf5_vol/cache_driver.hpp"

#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "hdf5_vol/cached_file.hpp"
#include "hdf5_vol/errors.hpp"
#include "hdf5_vol/larder_vol.h"

namespace larder::vol {
namespace {

// What HDF5 holds: its public part first, then ours.
struct DriverFile {
  H5FD_t pub;  // must stay the first member
  CachedFile* file;
  haddr_t eoa;
};

constexpr haddr_t kMaxAddr = (static_cast<haddr_t>(1) << (8 * sizeof(off_t) - 1)) - 1;

DriverFile* of(H5FD_t* f) {
  return reinterpret_cast<DriverFile*>(f);
}
const DriverFile* of(const H5FD_t* f) {
  return reinterpret_cast<const DriverFile*>(f);
}

std::string errno_text(int err) {
  return std::to_string(err) + " (" + std::strerror(err) + ")";
}

H5FD_t* driver_open(const char* name, unsigned flags, hid_t, haddr_t maxaddr) noexcept {
  try {
    if (name == nullptr || *name == '\0') {
      push_error(Minor::kOpen, "no file name");
      return nullptr;
    }
    if ((flags & (H5F_ACC_RDWR | H5F_ACC_TRUNC | H5F_ACC_EXCL | H5F_ACC_CREAT)) != 0) {
      push_error(Minor::kUnsupported, "the larder driver opens files read-only: '" +
                                          std::string(name) + "' asked for writing");
      return nullptr;
    }
    if (maxaddr == 0 || maxaddr == HADDR_UNDEF || maxaddr > kMaxAddr) {
      push_error(Minor::kOpen, "bogus maxaddr for '" + std::string(name) + "'");
      return nullptr;
    }
    std::unique_ptr<CachedFile> file = CachedFile::open(name);
    if (!file) {
      push_error(Minor::kOpen, "unable to open file: name = '" + std::string(name) +
                                   "', errno = " + errno_text(errno));
      return nullptr;
    }
    auto* f = new DriverFile{};
    f->file = file.release();
    return &f->pub;
  } catch (...) {
    push_error(Minor::kInternal, "out of memory opening a file");
    return nullptr;
  }
}

herr_t driver_close(H5FD_t* f) noexcept {
  if (f == nullptr) return -1;
  delete of(f)->file;
  delete of(f);
  return 0;
}

int driver_cmp(const H5FD_t* a, const H5FD_t* b) noexcept {
  return of(a)->file->compare(*of(b)->file);
}

herr_t driver_query(const H5FD_t*, unsigned long* flags) noexcept {
  if (flags != nullptr) {
    *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
             H5FD_FEAT_AGGREGATE_SMALLDATA | H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
  }
  return 0;
}

haddr_t driver_get_eoa(const H5FD_t* f, H5FD_mem_t) noexcept {
  return of(f)->eoa;
}

herr_t driver_set_eoa(H5FD_t* f, H5FD_mem_t, haddr_t addr) noexcept {
  of(f)->eoa = addr;
  return 0;
}

haddr_t driver_get_eof(const H5FD_t* f, H5FD_mem_t) noexcept {
  return of(f)->file->size();
}

herr_t driver_get_handle(H5FD_t* f, hid_t, void** handle) noexcept {
  if (handle == nullptr) return -1;
  int* fd = of(f)->file->posix_handle();
  if (fd == nullptr) {
    push_error(Minor::kOpen,
               "no POSIX handle for '" + of(f)->file->path() + "': errno = " + errno_text(errno));
    return -1;
  }
  *handle = fd;
  return 0;
}

// Like HDF5's sec2 driver: bytes past the end of the file read as zeros.
herr_t driver_read(H5FD_t* f, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buf) noexcept {
  if (addr == HADDR_UNDEF || addr > kMaxAddr || size > kMaxAddr - addr) {
    push_error(Minor::kRead, "address overflow: addr = " + std::to_string(addr));
    return -1;
  }
  auto* out = static_cast<unsigned char*>(buf);
  CachedFile& file = *of(f)->file;
  while (size > 0) {
    const ssize_t n = file.read_at(out, size, addr);
    if (n < 0) {
      if (errno == EINTR) continue;
      push_error(Minor::kRead,
                 "read failed: file = '" + file.path() + "', addr = " + std::to_string(addr) +
                     ", size = " + std::to_string(size) + ", errno = " + errno_text(errno));
      return -1;
    }
    if (n == 0) {
      std::memset(out, 0, size);
      break;
    }
    size -= static_cast<size_t>(n);
    addr += static_cast<haddr_t>(n);
    out += n;
  }
  return 0;
}

herr_t driver_write(H5FD_t* f, H5FD_mem_t, hid_t, haddr_t, size_t, const void*) noexcept {
  push_error(Minor::kUnsupported,
             "the larder driver is read-only: no write to '" + of(f)->file->path() + "'");
  return -1;
}

constexpr H5FD_class_t kCacheDriver = {
    .version = H5FD_CLASS_VERSION,
    .value = LARDER_VOL_VALUE,
    .name = LARDER_VOL_NAME,
    .maxaddr = kMaxAddr,
    .fc_degree = H5F_CLOSE_WEAK,
    .terminate = nullptr,
    .sb_size = nullptr,
    .sb_encode = nullptr,
    .sb_decode = nullptr,
    .fapl_size = 0,
    .fapl_get = nullptr,
    .fapl_copy = nullptr,
    .fapl_free = nullptr,
    .dxpl_size = 0,
    .dxpl_copy = nullptr,
    .dxpl_free = nullptr,
    .open = &driver_open,
    .close = &driver_close,
    .cmp = &driver_cmp,
    .query = &driver_query,
    .get_type_map = nullptr,
    .alloc = nullptr,
    .free = nullptr,
    .get_eoa = &driver_get_eoa,
    .set_eoa = &driver_set_eoa,
    .get_eof = &driver_get_eof,
    .get_handle = &driver_get_handle,
    .read = &driver_read,
    .write = &driver_write,
    .read_vector = nullptr,
    .write_vector = nullptr,
    .read_selection = nullptr,
    .write_selection = nullptr,
    .flush = nullptr,
    .truncate = nullptr,
    .lock = nullptr,  // files under the cache are immutable for the job: no locks taken
    .unlock = nullptr,
    .del = nullptr,
    .ctl = nullptr,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

struct Registration {
  std::mutex mu;
  hid_t id = H5I_INVALID_HID;
};

Registration& registration() {
  static auto* const r = new Registration();  // never deleted: used at HDF5 teardown
  return *r;
}

}  // namespace

hid_t cache_driver_id() noexcept {
  Registration& r = registration();
  std::lock_guard lock(r.mu);
  if (r.id < 0 || H5Iis_valid(r.id) <= 0) r.id = H5FDregister(&kCacheDriver);
  return r.id;
}

bool is_cache_driver(hid_t driver_id) noexcept {
  Registration& r = registration();
  std::lock_guard lock(r.mu);
  return r.id >= 0 && driver_id == r.id;
}

}  // namespace larder::vol
