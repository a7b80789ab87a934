#include "runtime/preload/ucx_hooks.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "runtime/api/runtime.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "ucx_transport/memory_hooks.hpp"

namespace larder::preload {
namespace {

constexpr std::size_t kWindow = 64;    // bytes compared at the start of a function
constexpr std::size_t kMaxPatch = 32;  // a hook's jump is at most this long (x86-64: 5 or 13)

struct Segment {
  ElfW(Addr) base = 0;  // the object's load bias
  const ElfW(Phdr) * phdr = nullptr;
  ElfW(Half) phnum = 0;
};

int find_segment(dl_phdr_info* info, std::size_t, void* data) {
  auto* seg = static_cast<Segment*>(data);
  if (info->dlpi_addr != seg->base) return 0;
  seg->phdr = info->dlpi_phdr;
  seg->phnum = info->dlpi_phnum;
  return 1;
}

// The file offset of `addr` (in the object of `seg`) when [addr, addr + kWindow) lies in one loaded
// segment's file contents; -1 otherwise.
off_t file_offset(const Segment& seg, const void* addr) {
  const auto v = reinterpret_cast<ElfW(Addr)>(addr) - seg.base;
  for (ElfW(Half) i = 0; i < seg.phnum; ++i) {
    const ElfW(Phdr)& p = seg.phdr[i];
    if (p.p_type == PT_LOAD && v >= p.p_vaddr && v + kWindow <= p.p_vaddr + p.p_filesz) {
      return static_cast<off_t>(p.p_offset + (v - p.p_vaddr));
    }
  }
  return -1;
}

// Puts back the original first bytes of `func` (a function of the object of `seg`, loaded from
// `file`) when a hook's jump was written over them. True when it did.
bool restore(const Segment& seg, const char* file, void* func, const char* name) {
  const off_t off = file_offset(seg, func);
  if (off < 0) return false;
  std::array<unsigned char, kWindow> original{};
  const int fd = sys::open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = sys::pread_full(fd, original.data(), original.size(), off);
  sys::close(fd);
  if (n != static_cast<ssize_t>(original.size())) return false;
  auto* code = static_cast<unsigned char*>(func);
  if (std::memcmp(code, original.data(), kWindow) == 0) return false;  // untouched
  std::size_t last = 0;                                                // the last byte that differs
  for (std::size_t i = 0; i < kWindow; ++i) {
    if (code[i] != original[i]) last = i;
  }
  // A hook rewrites the entry and nothing far from it; anything else (a library file replaced
  // since it was loaded) is left alone.
  if (code[0] == original[0] || last >= kMaxPatch) {
    LARDER_LOG_WARN(
        "{} in the preload library differs from its file in an unexpected way; "
        "mmap of managed files may fail with EBADF",
        name);
    return false;
  }
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<std::uintptr_t>(code) & ~(page - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(code) + last + 1 + page - 1) & ~(page - 1);
  void* pages = code - (reinterpret_cast<std::uintptr_t>(code) - start);  // `start`, as a pointer
  if (::mprotect(pages, end - start, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
    LARDER_LOG_WARN(
        "cannot take {} back from UCX's memory hook (mprotect: {}); mmap of managed "
        "files will fail with EBADF: set UCX_MEM_MMAP_HOOK_MODE=none",
        name, log::errno_text(errno));
    return false;
  }
  std::memcpy(code, original.data(), last + 1);
  __builtin___clear_cache(reinterpret_cast<char*>(code), reinterpret_cast<char*>(code + last + 1));
  ::mprotect(pages, end - start, PROT_READ | PROT_EXEC);
  return true;
}

}  // namespace

MmapFn ucm_mmap() noexcept {
  const Runtime* rt = Runtime::existing();  // mmap runs before the constructor too
  return rt != nullptr ? reinterpret_cast<MmapFn>(rt->ucm_mmap()) : nullptr;
}

MunmapFn ucm_munmap() noexcept {
  const Runtime* rt = Runtime::existing();
  return rt != nullptr ? reinterpret_cast<MunmapFn>(rt->ucm_munmap()) : nullptr;
}

int take_mmap_from_ucx() noexcept {
  (void)ucx::install_memory_hooks_now();
  int restored = 0;
  bool munmap_restored = false;
  for (const char* name : {"mmap", "mmap64", "munmap"}) {
    // The definition the program's calls reach first: the preload library's, or that of a tool
    // in front of it (ASan's interceptor, which then calls the preload's): the one UCX hooked.
    void* func = ::dlsym(RTLD_DEFAULT, name);
    Dl_info where{};
    link_map* object = nullptr;
    if (func == nullptr ||
        ::dladdr1(func, &where, reinterpret_cast<void**>(&object), RTLD_DL_LINKMAP) == 0 ||
        object == nullptr) {
      continue;
    }
    Segment seg;
    seg.base = object->l_addr;
    if (::dl_iterate_phdr(find_segment, &seg) == 0 || seg.phdr == nullptr) continue;
    const char* file =
        object->l_name != nullptr && object->l_name[0] != '\0' ? object->l_name : "/proc/self/exe";
    if (restore(seg, file, func, name)) {
      ++restored;
      munmap_restored = munmap_restored || std::strcmp(name, "munmap") == 0;
    }
  }
  if (munmap_restored) {
    if (void* ucm = ::dlsym(RTLD_DEFAULT, "ucm_munmap")) Runtime::instance().set_ucm_munmap(ucm);
  }
  if (restored > (munmap_restored ? 1 : 0)) {
    // UCX wanted to see every mmap: pass the calls Larder does not serve to it.
    if (void* ucm = ::dlsym(RTLD_DEFAULT, "ucm_mmap")) Runtime::instance().set_ucm_mmap(ucm);
  }
  if (restored > 0) {
    LARDER_LOG_DEBUG("took {} entry points back from UCX's memory hooks (munmap {})", restored,
                     munmap_restored ? "included" : "not hooked");
  }
  return restored;
}

}  // namespace larder::preload
