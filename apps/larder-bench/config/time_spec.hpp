// TimeSpec: a duration in seconds as DLIO configures computation_time, eval_time and
// preprocess_time (utility.py sleep()):
//   0.323                                  constant
//   {mean: 0.3}                            constant
//   {mean: 0.3, stdev: 0.05}               normal
//   {type: normal, mean, stdev}            normal
//   {type: uniform, min, max}              uniform
//   {type: gamma, shape, scale}            gamma
//   {type: exponential, scale}             exponential
//   {type: poisson, lam}                   poisson
// A draw is |value| (DLIO sleeps abs(sleep_time)). `<key>_stdev` next to a scalar makes the
// scalar a normal mean. DLIO draws from numpy's unseeded global stream; larder-bench uses a
// per-rank std::mt19937_64 seeded from train.seed and the rank, so runs are repeatable.
#ifndef LARDER_APPS_LARDER_BENCH_CONFIG_TIME_SPEC_HPP_
#define LARDER_APPS_LARDER_BENCH_CONFIG_TIME_SPEC_HPP_

#include <yaml-cpp/yaml.h>

#include <random>
#include <string>

#include "apps/larder-bench/common/result.hpp"

namespace larder::bench {

struct TimeSpec {
  enum class Kind { kConstant, kNormal, kUniform, kGamma, kExponential, kPoisson };
  Kind kind = Kind::kConstant;
  double mean = 0.0;   // constant value or normal mean
  double stdev = 0.0;  // normal
  double min = 0.0;    // uniform
  double max = 0.0;    // uniform
  double shape = 1.0;  // gamma
  double scale = 1.0;  // gamma, exponential
  double lam = 0.0;    // poisson

  // Parses a scalar or a map; `what` names the key in error messages.
  static Result<TimeSpec> parse(const YAML::Node& node, const std::string& what);

  bool is_zero() const noexcept { return kind == Kind::kConstant && mean == 0.0; }
  double draw(std::mt19937_64& rng) const;
  // DLIO's "(set value: ...)" text: the number, or the map as Python prints a dict.
  std::string describe() const;
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_CONFIG_TIME_SPEC_HPP_
