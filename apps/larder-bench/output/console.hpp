// Console: DLIO-style lines on rank 0 and the progress display.
//
//   [OUTPUT] 2025-01-01T12:00:00.123456 Starting epoch 1: 24 steps expected
//   [METRIC] Training Accelerator Utilization [AU] (%): 95.1234 (0.5678)
//   [WARNING] ... / [ERROR] ...      (errors are printed by the rank that hit them)
// DLIO-style lines go to stdout. The progress display is one line on stderr, redrawn at most
// five times a second, shown only on rank 0, only when stderr is a terminal, and never with
// --no-progress; printing a line first clears it.
// Like DLIO's logging, rank 0's lines also go to a log file (`dlio.log` in the output directory,
// start_log): the lines printed before it was opened first, then every line as it is printed.
#ifndef LARDER_APPS_LARDER_BENCH_OUTPUT_CONSOLE_HPP_
#define LARDER_APPS_LARDER_BENCH_OUTPUT_CONSOLE_HPP_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "apps/larder-bench/common/result.hpp"

namespace larder::bench {

// Local time as DLIO's utcnow() prints it: %Y-%m-%dT%H:%M:%S.%f
std::string dlio_timestamp();

class Console {
 public:
  Console(int rank, bool progress_allowed);

  bool root() const noexcept { return rank_ == 0; }
  void output(std::string_view message);   // rank 0: "[OUTPUT] {ts} message"
  void metric(std::string_view message);   // rank 0: "[METRIC] message"
  void warning(std::string_view message);  // rank 0: "[WARNING] {ts} message"
  void error(std::string_view message);    // any rank, stderr: "[ERROR] rank N: message"

  // Rank 0: from now on every line also goes to `path` (created or truncated), after the lines
  // printed so far. Other ranks: nothing. finish_log() closes it and reports a failed write.
  Status start_log(const std::string& path);
  Status finish_log();

  // Progress: `label` and a step count; update() redraws when due.
  void progress_start(std::string label, std::int64_t total);
  void progress_update(std::int64_t done, std::string_view detail);
  void progress_end();

 private:
  void clear_progress();
  void emit(std::FILE* stream, const std::string& line);

  int rank_;
  bool progress_enabled_;
  bool progress_shown_ = false;
  std::string label_;
  std::int64_t total_ = 0;
  std::chrono::steady_clock::time_point started_{};
  std::chrono::steady_clock::time_point last_draw_{};
  std::vector<std::string> history_;  // rank 0's lines until the log opens
  std::FILE* log_ = nullptr;          // owned: the log file, once open
  std::string log_path_;
  bool log_failed_ = false;  // a write to the log failed
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_OUTPUT_CONSOLE_HPP_
