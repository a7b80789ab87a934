// The thread's re-entry depth: how many Larder entry points are on this thread's stack. An
// interposed call made while it is non-zero (by the runtime itself, by MPI or UCX inside a
// Larder call, or on a thread the runtime owns) goes straight to the real function. Initial-exec
// TLS: one instruction to read, no allocation, safe inside the preload library's wrappers.
#ifndef LARDER_RUNTIME_API_REENTRY_HPP_
#define LARDER_RUNTIME_API_REENTRY_HPP_

namespace larder {

inline thread_local int t_reentry_depth __attribute__((tls_model("initial-exec"))) = 0;

// For the life of a thread Larder starts (agent, service): everything it calls goes straight to
// the real functions.
inline void mark_runtime_thread() noexcept {
  t_reentry_depth = 1;
}

class ReentryGuard {
 public:
  ReentryGuard() noexcept : outermost_(t_reentry_depth++ == 0) {}
  ~ReentryGuard() { --t_reentry_depth; }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;
  bool outermost() const noexcept { return outermost_; }

 private:
  bool outermost_;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_API_REENTRY_HPP_
