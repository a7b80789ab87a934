// Raw system calls for the runtime's own file work.
//
// The preload library interposes open/read/stat/mmap in the whole process. The runtime's own
// reads of the parallel file system and its arena files must never come back through those
// wrappers, so they go straight to the kernel here. Each function behaves like its libc
// namesake: the result, or -1 with errno set. pread_full retries short reads and EINTR.
#ifndef LARDER_RUNTIME_COMMON_SYS_HPP_
#define LARDER_RUNTIME_COMMON_SYS_HPP_

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace larder::sys {

int open(const char* path, int flags, mode_t mode = 0) noexcept;
int openat(int dirfd, const char* path, int flags, mode_t mode = 0) noexcept;
int close(int fd) noexcept;
ssize_t pread(int fd, void* buf, std::size_t count, off_t offset) noexcept;
ssize_t pwrite(int fd, const void* buf, std::size_t count, off_t offset) noexcept;
ssize_t read(int fd, void* buf, std::size_t count) noexcept;
ssize_t write(int fd, const void* buf, std::size_t count) noexcept;
// Reads until `count` bytes, end of file, or an error; returns the bytes read or -1.
ssize_t pread_full(int fd, void* buf, std::size_t count, off_t offset) noexcept;
// Writes all `count` bytes or returns -1.
ssize_t write_full(int fd, const void* buf, std::size_t count) noexcept;
int fstat(int fd, struct stat* st) noexcept;
int stat(const char* path, struct stat* st) noexcept;
int lstat(const char* path, struct stat* st) noexcept;
int fallocate(int fd, int mode, off_t offset, off_t len) noexcept;
int ftruncate(int fd, off_t len) noexcept;
int mkdir(const char* path, mode_t mode) noexcept;
int unlink(const char* path) noexcept;
int unlinkat(int dirfd, const char* path, int flags) noexcept;
int rmdir(const char* path) noexcept;
int flock(int fd, int op) noexcept;
int dup(int fd) noexcept;
// Under AddressSanitizer a successful mapping's shadow is cleared (see forget_shadow).
void* mmap(void* addr, std::size_t len, int prot, int flags, int fd, off_t offset) noexcept;
// Under AddressSanitizer, clears the shadow of a fresh mapping [addr, addr + len); nothing
// otherwise. A mapping may take addresses whose shadow still marks a stack's redzones: in a
// forked child, glibc unmaps the parent's other threads' stacks without ASan clearing their
// shadow (google/sanitizers#836), and system calls made directly bypass ASan's mmap interceptor.
void forget_shadow(void* addr, std::size_t len) noexcept;
int munmap(void* addr, std::size_t len) noexcept;
// Retries EINTR (MADV_POPULATE_* can be interrupted).
int madvise(void* addr, std::size_t len, int advice) noexcept;
// Which pages of [addr, addr + len) are in memory (addr page-aligned; vec: a byte per page).
int mincore(void* addr, std::size_t len, unsigned char* vec) noexcept;
// getdents64 into buf; returns the bytes filled, 0 at the end, or -1.
long getdents64(int fd, void* buf, std::size_t len) noexcept;
int access(const char* path, int mode) noexcept;
int rename(const char* from, const char* to) noexcept;
int link(const char* from, const char* to) noexcept;
int chmod(const char* path, mode_t mode) noexcept;
int fchmod(int fd, mode_t mode) noexcept;
ssize_t sendfile(int out_fd, int in_fd, off_t* offset, std::size_t count) noexcept;

}  // namespace larder::sys

#endif  // LARDER_RUNTIME_COMMON_SYS_HPP_
