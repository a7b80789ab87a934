// Channel: framed messages over a connected Unix-domain stream socket, the abstract-namespace
// address of an agent, and the peer-credential check. Uses send/recv (never interposed).
#ifndef LARDER_RUNTIME_AGENT_CHANNEL_HPP_
#define LARDER_RUNTIME_AGENT_CHANNEL_HPP_

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "runtime/agent/protocol.hpp"
#include "runtime/common/status.hpp"

namespace larder::agent {

// A fresh agent name for this process: "@larder-<uid>-<pid>-<random hex>".
std::string new_agent_name();
// The pid an agent name carries; -1 when `name` is not an agent name.
int agent_pid(std::string_view name) noexcept;
// The sockaddr of an abstract name ("@..."); its length in *len.
sockaddr_un agent_address(std::string_view name, socklen_t* len) noexcept;

// The peer's credentials; an error unless its uid is ours (and its pid `pid`, when >= 0).
Status check_peer(int fd, int pid);

Status send_message(int fd, Op op, std::uint32_t status, std::span<const std::byte> a,
                    std::span<const std::byte> b = {});
Status recv_exact(int fd, void* buf, std::size_t n);

template <class T>
std::span<const std::byte> bytes_of(const T& v) noexcept {
  return {reinterpret_cast<const std::byte*>(&v), sizeof v};
}
inline std::span<const std::byte> bytes_of(std::string_view s) noexcept {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace larder::agent

#endif  // LARDER_RUNTIME_AGENT_CHANNEL_HPP_
