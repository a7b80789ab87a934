#include "runtime/agent/channel.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace larder::agent {

std::string new_agent_name() {
  std::uint64_t token = 0;
  if (::getrandom(&token, sizeof token, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof token)) {
    token = static_cast<std::uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^
            reinterpret_cast<std::uintptr_t>(&token);
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "@larder-%u-%d-%016llx", static_cast<unsigned>(::geteuid()),
                static_cast<int>(::getpid()), static_cast<unsigned long long>(token));
  return buf;
}

int agent_pid(std::string_view name) noexcept {
  constexpr std::string_view kStart = "@larder-";
  if (!name.starts_with(kStart)) return -1;
  name.remove_prefix(kStart.size());
  const std::size_t dash1 = name.find('-');
  if (dash1 == std::string_view::npos) return -1;
  name.remove_prefix(dash1 + 1);
  int pid = -1;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc() || ptr == name.data() || ptr == name.data() + name.size() || *ptr != '-')
    return -1;
  return pid > 0 ? pid : -1;
}

sockaddr_un agent_address(std::string_view name, socklen_t* len) noexcept {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, then the name without its '@'.
  std::string_view body = name.starts_with('@') ? name.substr(1) : name;
  const std::size_t n = std::min(body.size(), sizeof addr.sun_path - 1);
  std::memcpy(addr.sun_path + 1, body.data(), n);
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return addr;
}

Status check_peer(int fd, int pid) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return from_errno(errno, "cannot read the peer credentials of the agent channel");
  }
  if (cred.uid != ::geteuid()) {
    return {Errc::kInvalidArgument, EPERM,
            "agent channel peer belongs to uid " + std::to_string(cred.uid) + ", not us"};
  }
  if (pid >= 0 && cred.pid != pid) {
    return {Errc::kInvalidArgument, EPERM,
            "agent channel peer is pid " + std::to_string(cred.pid) + ", not the rank " +
                std::to_string(pid)};
  }
  return {};
}

Status send_message(int fd, Op op, std::uint32_t status, std::span<const std::byte> a,
                    std::span<const std::byte> b) {
  Header h;
  h.op = static_cast<std::uint32_t>(op);
  h.status = status;
  h.length = a.size() + b.size();
  iovec iov[3] = {{&h, sizeof h},
                  {const_cast<std::byte*>(a.data()), a.size()},
                  {const_cast<std::byte*>(b.data()), b.size()}};
  std::size_t first = 0;
  while (first < 3) {
    msghdr msg{};
    msg.msg_iov = iov + first;
    msg.msg_iovlen = 3 - first;
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return from_errno(errno, "agent channel send failed");
    }
    auto left = static_cast<std::size_t>(n);
    while (first < 3 && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (first < 3) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return {};
}

Status recv_exact(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::recv(fd, p + done, n - done, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return from_errno(errno, "agent channel receive failed");
    }
    if (got == 0) return {Errc::kUnavailable, EPIPE, "agent channel closed"};
    done += static_cast<std::size_t>(got);
  }
  return {};
}

}  // namespace larder::agent
