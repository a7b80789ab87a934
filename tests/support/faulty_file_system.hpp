// FaultyFileSystem: the real file system, except for failures a test injects.
#ifndef LARDER_TESTS_SUPPORT_FAULTY_FILE_SYSTEM_HPP_
#define LARDER_TESTS_SUPPORT_FAULTY_FILE_SYSTEM_HPP_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>

#include "runtime/pfs/posix_file_system.hpp"

namespace larder::testing {

class FaultyFileSystem final : public FileSystem {
 public:
  explicit FaultyFileSystem(Stats& stats) : real_(stats) {}

  std::atomic<int> fail_reads_with{0};    // errno for every read (0: none)
  std::atomic<int> fail_resolve_with{0};  // errno for every resolve (0: none)
  // With `meet` > 1: each read waits until `meet` reads are in flight at once (at most 30 s, once:
  // a caller reading one file at a time is slow, never stuck); max_in_flight records the most
  // seen. Shows that reads are made several at a time without timing them.
  int meet = 0;
  std::atomic<int> max_in_flight{0};
  // While held (hold(true)), every read (of `path` only, when one is named) waits (at most 30 s)
  // until hold(false); wait_held(n) returns once n reads are waiting (false after 30 s). Lets a
  // test act while a load is under way.
  void hold(bool held, std::string path = {}) {
    std::lock_guard lock(mu_);
    held_ = held;
    held_path_ = std::move(path);
    cv_.notify_all();
  }
  bool wait_held(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return waiting_ >= n; });
  }

  Result<ResolvedPath> resolve(const std::string& path) override {
    if (int e = fail_resolve_with.load(); e != 0) return from_errno(e, "injected resolve failure");
    return real_.resolve(path);
  }
  Result<std::size_t> read(const std::string& path, std::uint64_t version, std::uint64_t offset,
                           std::span<std::byte> into) override {
    if (int e = fail_reads_with.load(); e != 0) return from_errno(e, "injected read failure");
    {
      std::unique_lock lock(mu_);
      if (held_ && (held_path_.empty() || held_path_ == path)) {
        ++waiting_;
        cv_.notify_all();
        cv_.wait_for(lock, std::chrono::seconds(30), [this] { return !held_; });
        --waiting_;
      }
    }
    if (meet > 1) {
      std::unique_lock lock(mu_);
      const int now = ++in_flight_;
      if (now > max_in_flight.load()) max_in_flight.store(now);
      if (now >= meet) met_ = true;
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::seconds(30), [this] { return met_; });
      met_ = true;  // met, or given up waiting once: no later read waits
      --in_flight_;
    }
    return real_.read(path, version, offset, into);
  }
  Result<FileMeta> lstat(const std::string& path) override { return real_.lstat(path); }
  Result<std::vector<std::byte>> list(const std::string& path) override { return real_.list(path); }

 private:
  PosixFileSystem real_;
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;      // guarded by mu_
  bool met_ = false;       // guarded by mu_: `meet` reads were in flight once (then none waits)
  bool held_ = false;      // guarded by mu_: reads wait for hold(false)
  std::string held_path_;  // guarded by mu_: the only path held (empty: every path)
  int waiting_ = 0;        // guarded by mu_: reads waiting while held
};

}  // namespace larder::testing

#endif  // LARDER_TESTS_SUPPORT_FAULTY_FILE_SYSTEM_HPP_
