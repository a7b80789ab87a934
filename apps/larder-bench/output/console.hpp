// Console: DLIO-style lines on rank 0 and the progress display.
//
//   [OUTPUT] 2025-01-01T12:00:00.123456 Starting epoch 1: 24 steps expected
//   [METRIC] Training Accelerator Utilization [AU] (%): 95.1234 (0.5678)
//   [WARNING] ... / [ERROR] ...      (errors are printed by the rank that hit them)
// DLIO-style lines go to stdout. The progress display is one line on stderr, redrawn at most
// five times a second, shown only on rank 0, only when stderr is a terminal, and never with
// --no-progress; printing a line first clears it.
#ifndef LARDER_APPS_LARDER_BENCH_OUTPUT_CONSOLE_HPP_
#define LARDER_APPS_LARDER_BENCH_OUTPUT_CONSOLE_HPP_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

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

  // Progress: `label` and a step count; update() redraws when due.
  void progress_start(std::string label, std::int64_t total);
  void progress_update(std::int64_t done, std::string_view detail);
  void progress_end();

 private:
  void clear_progress();

  int rank_;
  bool progress_enabled_;
  bool progress_shown_ = false;
  std::string label_;
  std::int64_t total_ = 0;
  std::chrono::steady_clock::time_point started_{};
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_OUTPUT_CONSOLE_HPP_
