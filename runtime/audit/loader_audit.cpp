// liblarder_audit.so: the dynamic loader's audit module (rtld-audit(7), LD_AUDIT). It sends the
// shared objects the loader opens from under LARDER_PREFIX to their node file, one copy per node
// that every process of the node maps (docs/architecture.md, "Shared objects").
//
// The module lives in a link-map namespace of its own, with its own C library: it cannot call
// the preload's runtime, so it asks its rank over the agent socket that worker processes use
// (runtime/agent/protocol.hpp, Op::kLoader and Op::kObject, sent to the agent's loader socket,
// served by a thread that never needs the loader's locks; the answers are made by
// runtime/api/loader_objects.cpp). Its own copy of `environ` is the one the process started
// with, so it reads the application's (LARDER_AGENT_SERVING is set by the rank once its agent
// serves, and inherited by forked workers) through the base namespace's C library.
//
// It never makes a load fail: with no agent (before MPI starts, a process with no rank, after
// finalize), any error, or no answer within LARDER_TIMEOUT, the loader opens what it asked for.
// After a timeout or a broken channel the process stops asking. No C++ runtime is used (the
// module is linked without libstdc++, so each process loads one small library more).
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/agent/protocol.hpp"
#include "runtime/api/loader_objects.hpp"

extern char** environ;

namespace {

namespace agent = larder::agent;

constexpr std::size_t kMaxName = 4096;
constexpr std::size_t kMaxPrefixes = 16384;
constexpr int kDefaultTimeoutMs = 60'000;  // LARDER_TIMEOUT's default

struct State {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  link_map* base_libc = nullptr;     // the application's C library (its `environ`)
  link_map* base_program = nullptr;  // the program (which may hold `environ` itself)
  char*** main_environ = nullptr;    // &environ there (dlsym), once found
  bool environ_looked_up = false;
  int fd = -1;
  pid_t fd_pid = 0;   // the process that connected `fd` (a forked child reconnects)
  pid_t off_pid = 0;  // this process stopped asking (timeout or broken channel)
  char agent[108] = {};
  bool have_tree = false;
  char root[kMaxName] = {};  // the node's loader tree ("" when the rank has none)
  std::size_t root_len = 0;
  char prefixes[kMaxPrefixes] = {};  // ':'-joined
  int timeout_ms = kDefaultTimeoutMs;
  bool debug = false;               // LARDER_LOADER_DEBUG=1: one line per answer on stderr
  char answer[kMaxName + 64] = {};  // the name la_objsearch returns (used before the next call)
};

State g;

// An address from the ELF dynamic section as a pointer (the loader's addresses are integers).
template <class T>
T* as_ptr(ElfW(Addr) address) {
  return reinterpret_cast<T*>(address);  // NOLINT(performance-no-int-to-ptr): ELF addresses
}

// The address of `name` in a loaded object, from its GNU hash table (dlsym on a handle of
// another namespace is not safe from inside the loader's callbacks).
void* find_symbol(const link_map* map, const char* name) {
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const std::uint32_t* gnu = nullptr;
  auto at = [map](ElfW(Addr) v) { return v < map->l_addr ? v + map->l_addr : v; };
  for (const ElfW(Dyn)* d = map->l_ld; d != nullptr && d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symtab = as_ptr<const ElfW(Sym)>(at(d->d_un.d_ptr));
    if (d->d_tag == DT_STRTAB) strtab = as_ptr<const char>(at(d->d_un.d_ptr));
    if (d->d_tag == DT_GNU_HASH) gnu = as_ptr<const std::uint32_t>(at(d->d_un.d_ptr));
  }
  if (symtab == nullptr || strtab == nullptr || gnu == nullptr || gnu[0] == 0) return nullptr;
  const std::uint32_t nbuckets = gnu[0];
  const std::uint32_t symoffset = gnu[1];
  const std::uint32_t bloom_words = gnu[2];
  const auto* buckets = reinterpret_cast<const std::uint32_t*>(
      reinterpret_cast<const ElfW(Addr)*>(gnu + 4) + bloom_words);
  const std::uint32_t* chain = buckets + nbuckets;
  std::uint32_t h = 5381;
  for (const auto* p = reinterpret_cast<const unsigned char*>(name); *p != 0; ++p) h = h * 33 + *p;
  std::uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return nullptr;
  for (;; ++i) {
    const std::uint32_t ch = chain[i - symoffset];
    if ((h | 1) == (ch | 1) && std::strcmp(strtab + symtab[i].st_name, name) == 0 &&
        symtab[i].st_shndx != SHN_UNDEF) {
      return as_ptr<void>(map->l_addr + symtab[i].st_value);
    }
    if ((ch & 1) != 0) return nullptr;
  }
}

// getenv over the application's environment (ours when it cannot be found).
const char* app_getenv(const char* key) {
  if (!g.environ_looked_up && g.base_libc != nullptr) {
    g.environ_looked_up = true;
    // A program that uses `environ` has its own copy of it (a copy relocation), which the C
    // library then uses too: look in the program first.
    for (const link_map* map : {g.base_program, g.base_libc}) {
      for (const char* name : {"environ", "__environ"}) {
        if (g.main_environ == nullptr && map != nullptr) {
          g.main_environ = static_cast<char***>(find_symbol(map, name));
        }
      }
    }
  }
  char** env = g.main_environ != nullptr ? *g.main_environ : environ;
  const std::size_t n = std::strlen(key);
  for (; env != nullptr && *env != nullptr; ++env) {
    if (std::strncmp(*env, key, n) == 0 && (*env)[n] == '=') return *env + n + 1;
  }
  return nullptr;
}

void disconnect() {
  if (g.fd >= 0 && g.fd_pid == ::getpid()) ::close(g.fd);
  g.fd = -1;
  g.have_tree = false;
}

void give_up() {
  if (g.debug) {
    std::fprintf(stderr,
                 "larder-audit[%d]: no answer from the agent; loading originals from now on\n",
                 static_cast<int>(::getpid()));
  }
  disconnect();
  g.off_pid = ::getpid();
}

// The pid an agent name ("@larder-<uid>-<pid>-<hex>") carries; -1 when none.
long name_pid(const char* name) {
  const char* p = std::strchr(name + 1, '-');  // after "@larder"
  if (p == nullptr) return -1;
  p = std::strchr(p + 1, '-');  // after the uid
  if (p == nullptr) return -1;
  char* end = nullptr;
  const long pid = std::strtol(p + 1, &end, 10);
  return end != p + 1 && *end == '-' ? pid : -1;
}

bool connect_to(const char* name) {
  if (std::strncmp(name, "@larder-", 8) != 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::size_t n = std::strlen(name + 1);
  if (n + 1 >= sizeof addr.sun_path) return false;
  constexpr char kSuffix[] = "-loader";  // AgentServer::loader_name
  if (n + sizeof kSuffix >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path + 1, name + 1, n);  // abstract: a leading NUL, then the name
  std::memcpy(addr.sun_path + 1 + n, kSuffix, sizeof kSuffix - 1);
  const auto len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n + sizeof kSuffix - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ucred cred{};
  socklen_t cred_len = sizeof cred;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 ||
      ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 || cred.uid != ::geteuid() ||
      cred.pid != name_pid(name)) {
    ::close(fd);
    return false;
  }
  g.fd = fd;
  g.fd_pid = ::getpid();
  std::strncpy(g.agent, name, sizeof g.agent - 1);
  return true;
}

bool wait_readable() {
  pollfd p{g.fd, POLLIN, 0};
  for (;;) {
    const int r = ::poll(&p, 1, g.timeout_ms);
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

bool recv_all(void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    if (!wait_readable()) return false;
    const ssize_t got = ::recv(g.fd, p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool send_all(const iovec* parts, int count) {
  iovec iov[3];
  std::memcpy(iov, parts, sizeof(iovec) * static_cast<std::size_t>(count));
  int first = 0;
  while (first < count) {
    msghdr msg{};
    msg.msg_iov = iov + first;
    msg.msg_iovlen = static_cast<std::size_t>(count - first);
    const ssize_t n = ::sendmsg(g.fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    auto left = static_cast<std::size_t>(n);
    while (first < count && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (first < count) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return true;
}

// One request and its reply; the reply's body (at most `cap` bytes) in `into`. -1: the channel
// failed (the caller gives up); else the reply's status, its body length in *got.
long long ask(agent::Op op, const void* head, std::size_t head_len, const char* name, void* into,
              std::size_t cap, std::size_t* got) {
  agent::Header h;
  h.op = static_cast<std::uint32_t>(op);
  h.length = head_len + (name != nullptr ? std::strlen(name) : 0);
  iovec parts[3] = {{&h, sizeof h},
                    {const_cast<void*>(head), head_len},
                    {const_cast<char*>(name != nullptr ? name : ""), h.length - head_len}};
  agent::Header r;
  if (!send_all(parts, 3) || !recv_all(&r, sizeof r) || r.op != h.op || r.length > cap) return -1;
  if (!recv_all(into, r.length)) return -1;
  *got = r.length;
  return r.status;
}

// Connected to this process's serving agent, with the node's tree and prefixes known.
bool ready() {
  const pid_t me = ::getpid();
  if (g.off_pid == me) return false;
  const char* serving = app_getenv(agent::kServingEnvName);
  if (serving == nullptr || *serving == '\0') {
    return false;  // no rank, or its runtime is not up (yet)
  }
  if (g.fd >= 0 && (g.fd_pid != me || std::strcmp(serving, g.agent) != 0)) disconnect();
  if (g.fd < 0 && !connect_to(serving)) {  // refused: no agent (yet, or any more)
    if (g.debug) {
      std::fprintf(stderr, "larder-audit[%d]: cannot connect to %s-loader\n", static_cast<int>(me),
                   serving);
    }
    return false;
  }
  if (g.have_tree) return true;
  static char reply[kMaxName + kMaxPrefixes];
  std::size_t got = 0;
  const long long status =
      ask(agent::Op::kLoader, nullptr, 0, nullptr, reply, sizeof reply - 1, &got);
  if (status != 0) {
    if (g.debug)
      std::fprintf(stderr, "larder-audit[%d]: the agent cannot answer\n", static_cast<int>(me));
    if (status < 0)
      give_up();
    else
      disconnect();  // the agent cannot answer now (its session is not up or is gone)
    return false;
  }
  reply[got] = '\0';
  const std::size_t root_len = std::strlen(reply);
  if (root_len >= sizeof g.root || got - root_len > sizeof g.prefixes) return false;
  std::memcpy(g.root, reply, root_len + 1);
  g.root_len = root_len;
  const std::size_t rest = root_len < got ? got - root_len - 1 : 0;
  std::memcpy(g.prefixes, reply + root_len + 1, rest);
  g.prefixes[rest] = '\0';
  g.have_tree = true;
  if (g.debug) {
    std::fprintf(stderr, "larder-audit[%d]: agent %s, tree %s, prefixes %s\n", static_cast<int>(me),
                 serving, g.root, g.prefixes);
  }
  return true;
}

bool starts_dir(const char* path, const char* dir, std::size_t n) {
  return n > 0 && std::strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

bool under_tree(const char* path) {
  return g.root_len > 0 && starts_dir(path, g.root, g.root_len) && path[g.root_len] == '/';
}

// Whether the agent manages `path` (under a prefix) or maps it back (under the tree).
bool ours(const char* path) {
  if (under_tree(path)) return true;
  for (const char* p = g.prefixes; *p != '\0';) {
    const char* end = std::strchr(p, ':');
    const std::size_t n = end != nullptr ? static_cast<std::size_t>(end - p) : std::strlen(p);
    if (starts_dir(path, p, n)) return true;
    if (end == nullptr) break;
    p = end + 1;
  }
  return false;
}

// The name without the tree's root (a name the agent gave back is always rooted there).
const char* original_of(const char* name) {
  return under_tree(name) ? name + g.root_len : name;
}

char* answer(const char* name) {
  std::strncpy(g.answer, name, sizeof g.answer - 1);
  g.answer[sizeof g.answer - 1] = '\0';
  return g.answer;
}

char* search_answer(const char* name, unsigned flag);

char* search(const char* name, unsigned flag) {
  char* out = search_answer(name, flag);
  if (g.debug) {
    std::fprintf(stderr, "larder-audit[%d]: %s %s -> %s\n", static_cast<int>(::getpid()),
                 flag == LA_SER_ORIG ? "name" : "candidate", name, out != nullptr ? out : "(none)");
  }
  return out;
}

char* search_answer(const char* name, unsigned flag) {
  if (!ready() || !ours(name)) return const_cast<char*>(original_of(name));
  const std::uint32_t exact = flag == LA_SER_ORIG ? 1 : 0;
  struct {
    agent::ObjectReply head;
    char path[kMaxName];
  } reply;
  std::size_t got = 0;
  const long long status =
      ask(agent::Op::kObject, &exact, sizeof exact, name, &reply, sizeof reply - 1, &got);
  if (status < 0) give_up();
  if (status != 0 || got < sizeof reply.head) return const_cast<char*>(original_of(name));
  reinterpret_cast<char*>(&reply)[got] = '\0';
  switch (static_cast<larder::ObjectKind>(reply.head.kind)) {
    case larder::ObjectKind::kNodeCopy:
      return answer(reply.path);
    case larder::ObjectKind::kAbsent:
      // A search goes on with its next directory without asking the PFS: a name that cannot
      // exist sets the loader's own errno to ENOENT. An exact name keeps the loader's message.
      if (exact == 0 && g.root_len > 0) {
        char absent[kMaxName + 16];
        std::memcpy(absent, g.root, g.root_len);
        std::memcpy(absent + g.root_len, "/.absent", 9);
        return answer(absent);
      }
      return answer(reply.path);
    case larder::ObjectKind::kOriginal:
      return answer(reply.path);
  }
  return const_cast<char*>(original_of(name));
}

int timeout_from_env() {
  const char* v = std::getenv("LARDER_TIMEOUT");  // set at launch: our own copy has it
  if (v == nullptr || *v == '\0') return kDefaultTimeoutMs;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || s <= 0 || s > 86400) return kDefaultTimeoutMs;
  return static_cast<int>(s * 1000);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) unsigned la_version(unsigned version) {
  g.timeout_ms = timeout_from_env();
  const char* debug = std::getenv("LARDER_LOADER_DEBUG");
  g.debug = debug != nullptr && std::strcmp(debug, "1") == 0;
  // Version 1 has everything used here; a loader that only knows 1 gets 1.
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

__attribute__((visibility("default"))) char* la_objsearch(const char* name, uintptr_t* /*cookie*/,
                                                          unsigned int flag) {
  if (name == nullptr || name[0] != '/') return const_cast<char*>(name);
  const int saved = errno;
  pthread_mutex_lock(&g.mu);
  char* out = search(name, flag);
  pthread_mutex_unlock(&g.mu);
  errno = saved;
  return out;
}

__attribute__((visibility("default"))) unsigned int la_objopen(link_map* map, Lmid_t lmid,
                                                               uintptr_t* /*cookie*/) {
  pthread_mutex_lock(&g.mu);
  if (lmid == LM_ID_BASE && g.base_program == nullptr) g.base_program = map;  // the first one
  if (lmid == LM_ID_BASE && g.base_libc == nullptr && map->l_name != nullptr) {
    const char* base = std::strrchr(map->l_name, '/');
    if (base != nullptr && std::strncmp(base + 1, "libc.so.", 8) == 0) g.base_libc = map;
  }
  // An object opened by its name in the tree is named as the original (dladdr, dlerror,
  // dl_iterate_phdr, a later dlopen of the original path); its $ORIGIN stays in the tree.
  if (map->l_name != nullptr && under_tree(map->l_name)) {
    std::memmove(map->l_name, map->l_name + g.root_len, std::strlen(map->l_name + g.root_len) + 1);
  }
  pthread_mutex_unlock(&g.mu);
  return 0;  // no symbol binding callbacks: calls through the PLT are not slowed
}

}  // extern "C"
