#include "runtime/mpi_hooks/exec_proxy.hpp"

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/agent/protocol.hpp"
#include "runtime/api/reentry.hpp"
#include "runtime/api/runtime.hpp"
#include "runtime/common/log.hpp"
#include "runtime/mpi_hooks/lifecycle.hpp"

namespace larder::mpi_hooks {
namespace {

// The child of the proxy (async-signal-safe reads only: set before vfork, read in the handler).
volatile sig_atomic_t g_child = 0;  // NOLINT: signal handlers can only use a sig_atomic_t global

constexpr int kForwarded[] = {SIGHUP,  SIGINT,  SIGQUIT,  SIGTERM, SIGUSR1, SIGUSR2,
                              SIGALRM, SIGCONT, SIGWINCH, SIGTSTP, SIGTTIN, SIGTTOU};

void forward(int sig) {
  const int saved = errno;
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
  errno = saved;
}

// `envp` with LARDER_AGENT (and LARDER_AGENT_SERVING) naming this rank's agent (replacing any
// other value), and, when the rank has no running session, LARDER_ENABLE=0 so the new image
// never starts MPI either.
std::vector<std::string> child_environment(char* const* envp, bool serve) {
  std::vector<std::string> out;
  for (char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.starts_with(std::string(agent::kEnvName) + "=")) continue;
    if (kv.starts_with(std::string(agent::kServingEnvName) + "=")) continue;
    if (!serve && kv.starts_with("LARDER_ENABLE=")) continue;
    out.emplace_back(kv);
  }
  const char* name = std::getenv(agent::kEnvName);
  if (serve && name != nullptr) out.push_back(std::string(agent::kEnvName) + "=" + name);
  const char* serving = std::getenv(agent::kServingEnvName);
  if (serve && serving != nullptr)
    out.push_back(std::string(agent::kServingEnvName) + "=" + serving);
  if (!serve) out.emplace_back("LARDER_ENABLE=0");
  return out;
}

[[noreturn]] void leave_like(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    ::kill(::getpid(), sig);
    ::syscall(SYS_exit_group, 128 + sig);
  }
  ::syscall(SYS_exit_group, WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  __builtin_unreachable();
}

}  // namespace

int exec_or_proxy(const ExecCall& call) noexcept {
  if (!owns_mpi_start()) return 0;
  Runtime& rt = Runtime::instance();
  (void)wait_until_started(rt.config().wait_timeout);
  const Phase phase = rt.mpi_life().phase.load();
  if (phase == Phase::kStopped) return 0;  // MPI failed to start, or is over: exec as usual
  if (phase == Phase::kStarting) {
    LARDER_LOG_ERROR(
        "this process execs while MPI is still starting (after {} s): the new program runs "
        "without Larder",
        rt.config().wait_timeout.count() / 1000);
  }
  try {
    const std::vector<std::string> env = child_environment(call.envp, phase == Phase::kRunning);
    std::vector<char*> envp;
    envp.reserve(env.size() + 1);
    for (const std::string& kv : env) envp.push_back(const_cast<char*>(kv.c_str()));
    envp.push_back(nullptr);
    LARDER_LOG_INFO("exec of {} from the rank's image: running it as a worker of this rank",
                    call.file != nullptr ? call.file : "?");

    struct sigaction fwd {};
    fwd.sa_handler = forward;
    sigemptyset(&fwd.sa_mask);
    fwd.sa_flags = SA_RESTART;
    struct sigaction saved[std::size(kForwarded)];
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) {
      ::sigaction(kForwarded[i], &fwd, &saved[i]);
    }
    auto restore = [&] {
      for (std::size_t i = 0; i < std::size(kForwarded); ++i) {
        ::sigaction(kForwarded[i], &saved[i], nullptr);
      }
    };

    const pid_t parent = ::getpid();
    volatile int exec_errno = 0;  // written by the vfork()ed child when its exec fails
    const pid_t child = ::vfork();
    if (child == 0) {
      // The child shares our memory until exec: system calls and the real exec only.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::syscall(SYS_exit_group, 127);
      call.exec(call.file, call.argv, envp.data());
      exec_errno = errno != 0 ? errno : ENOEXEC;
      ::syscall(SYS_exit_group, 127);
    }
    if (child < 0 || exec_errno != 0) {
      // No new program: the exec fails, as it would have, and this image goes on.
      const int err = child < 0 ? errno : exec_errno;
      if (child > 0) {
        while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
        }
      }
      restore();
      errno = err;
      return -1;
    }
    g_child = child;
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
    on_exit();  // stops Larder and MPI on this thread
    leave_like(status);
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
}

}  // namespace larder::mpi_hooks
