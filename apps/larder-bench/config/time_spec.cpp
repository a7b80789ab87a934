#include "apps/larder-bench/config/time_spec.hpp"

#include <fmt/format.h>

#include <cmath>

namespace larder::bench {
namespace {

Result<double> number(const YAML::Node& map, const char* key, const std::string& what,
                      double fallback) {
  const YAML::Node v = map[key];
  if (!v) return fallback;
  try {
    return v.as<double>();
  } catch (const YAML::Exception&) {
    return Status::error(fmt::format("{}.{}: expected a number, got '{}'", what, key,
                                     v.IsScalar() ? v.Scalar() : std::string("a map or list")));
  }
}

}  // namespace

Result<TimeSpec> TimeSpec::parse(const YAML::Node& node, const std::string& what) {
  TimeSpec t;
  if (!node || node.IsNull()) return t;
  if (node.IsScalar()) {
    try {
      t.mean = node.as<double>();
      return t;
    } catch (const YAML::Exception&) {
      return Status::error(
          fmt::format("{}: expected seconds or a distribution map, got '{}'", what, node.Scalar()));
    }
  }
  if (!node.IsMap()) return Status::error(what + ": expected seconds or a distribution map");
  std::string type;
  if (node["type"]) type = node["type"].Scalar();
  auto get = [&](const char* key, double fallback, double& out) -> Status {
    auto r = number(node, key, what, fallback);
    if (!r.ok()) return r.status();
    out = r.value();
    return {};
  };
  Status s;
  if (!(s = get("mean", 0.0, t.mean)).ok() || !(s = get("stdev", 0.0, t.stdev)).ok() ||
      !(s = get("min", 0.0, t.min)).ok() || !(s = get("max", 0.0, t.max)).ok() ||
      !(s = get("shape", 1.0, t.shape)).ok() || !(s = get("scale", 1.0, t.scale)).ok() ||
      !(s = get("lam", 0.0, t.lam)).ok()) {
    return s;
  }
  if (type.empty()) {
    t.kind = node["stdev"] ? Kind::kNormal : Kind::kConstant;
  } else if (type == "normal") {
    t.kind = Kind::kNormal;
  } else if (type == "uniform") {
    t.kind = Kind::kUniform;
  } else if (type == "gamma") {
    t.kind = Kind::kGamma;
  } else if (type == "exponential") {
    t.kind = Kind::kExponential;
  } else if (type == "poisson") {
    t.kind = Kind::kPoisson;
  } else {
    return Status::error(fmt::format(
        "{}.type: '{}' is not valid: accepted normal, uniform, gamma, exponential, poisson", what,
        type));
  }
  return t;
}

double TimeSpec::draw(std::mt19937_64& rng) const {
  double v = mean;
  switch (kind) {
    case Kind::kConstant:
      break;
    case Kind::kNormal:
      if (stdev > 0) v = std::normal_distribution<double>(mean, stdev)(rng);
      break;
    case Kind::kUniform:
      v = std::uniform_real_distribution<double>(min, max)(rng);
      break;
    case Kind::kGamma:
      v = std::gamma_distribution<double>(shape, scale)(rng);
      break;
    case Kind::kExponential:
      v = std::exponential_distribution<double>(1.0 / scale)(rng);
      break;
    case Kind::kPoisson:
      v = static_cast<double>(std::poisson_distribution<long>(lam)(rng));
      break;
  }
  return std::fabs(v);
}

std::string TimeSpec::describe() const {
  switch (kind) {
    case Kind::kConstant:
      return fmt::format("{}", mean);
    case Kind::kNormal:
      return fmt::format("{{'mean': {}, 'stdev': {}}}", mean, stdev);
    case Kind::kUniform:
      return fmt::format("{{'type': 'uniform', 'min': {}, 'max': {}}}", min, max);
    case Kind::kGamma:
      return fmt::format("{{'type': 'gamma', 'shape': {}, 'scale': {}}}", shape, scale);
    case Kind::kExponential:
      return fmt::format("{{'type': 'exponential', 'scale': {}}}", scale);
    case Kind::kPoisson:
      return fmt::format("{{'type': 'poisson', 'lam': {}}}", lam);
  }
  return "?";
}

}  // namespace larder::bench
