// larder-readbench: read bandwidth and latency of Larder's cache hits, measured side by side.
//
//   mpiexec.mpich -n 2 larder-readbench tiers        self/node/remote hits vs memcpy, 4K..64M
//   mpiexec.mpich -n 2 larder-readbench verify       XXH3 vs memcpy; remote reads, verify off/on
//   mpiexec.mpich -n 2 larder-readbench transports   remote hits over ucx and mpi, 4K..64M
//   mpiexec.mpich -n 2 larder-readbench idle         CPU a rank uses while it sleeps, without
//                                                    and with Larder running (its threads' cost)
//
// Every figure comes from the same run; ratios are printed next to the figures. --json writes
// the raw samples (used by transport_report.py to add ucx_perftest's figures).
#include <fcntl.h>
#include <larder/larder.h>
#include <mpi.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "apps/larder-readbench/measure.hpp"

namespace po = boost::program_options;
using larder::bench::Locality;
using larder::bench::Plan;
using larder::bench::Sample;

namespace {

std::uint64_t parse_size(const std::string& s) {
  std::size_t end = 0;
  const std::uint64_t v = std::stoull(s, &end);
  const std::string unit = s.substr(end);
  if (unit.empty()) return v;
  if (unit == "K" || unit == "k") return v << 10;
  if (unit == "M" || unit == "m") return v << 20;
  if (unit == "G" || unit == "g") return v << 30;
  throw std::invalid_argument("bad size '" + s + "' (accepted: a number with K, M or G)");
}

std::string size_label(std::uint64_t v) {
  if (v >= (1u << 20) && v % (1u << 20) == 0) return fmt::format("{}M", v >> 20);
  if (v >= 1024 && v % 1024 == 0) return fmt::format("{}K", v >> 10);
  return std::to_string(v);
}

nlohmann::json to_json(const Sample& s) {
  return {{"bytes", s.bytes},
          {"ops", s.ops},
          {"seconds", s.seconds},
          {"GBps", s.gbps()},
          {"usec_per_op", s.usec_per_op()},
          {"reader_cpu_s", s.reader_cpu_s},
          {"serving_cpu_s", s.serving_cpu_s}};
}

struct Args {
  std::string mode;
  std::string dir;
  std::vector<std::uint64_t> sizes;
  std::uint64_t bytes = 0;
  std::uint64_t footprint = 0;
  std::string json;
  unsigned seconds = 10;
  unsigned repeat = 3;
  bool waiters_sleep = false;
  std::string transport = "ucx";  // verify: the transport of the remote reads
};

Plan plan_for(const Args& a, std::uint64_t size, const std::string& transport) {
  Plan p;
  p.dir = a.dir;
  p.chunk = size;
  p.chunks = std::clamp<std::uint64_t>(a.footprint / size, 4, 4096);
  p.target = a.bytes;
  p.transport = transport;
  p.waiters_sleep = a.waiters_sleep;
  return p;
}

nlohmann::json run_tiers(const Args& a, int rank) {
  nlohmann::json out = nlohmann::json::array();
  if (rank == 0) {
    fmt::print("{:>6} | {:>8} | {:>8} {:>6} | {:>8} {:>6} | {:>8} {:>6} | {:>9} {:>9}\n", "size",
               "memcpy", "self", "ratio", "node", "ratio", "remote", "ratio", "node us",
               "remote us");
    fmt::print("{:>6} | {:>8} | {:>15} | {:>15} | {:>15} |\n", "", "GB/s", "GB/s  x memcpy",
               "GB/s  x memcpy", "GB/s  x memcpy");
  }
  for (std::uint64_t size : a.sizes) {
    const Plan p = plan_for(a, size, "ucx");
    Sample mem;
    if (rank == 0) mem = larder::bench::measure_memcpy(p);
    const Sample self = larder::bench::measure_hits(p, Locality::kSelf);
    const Sample node = larder::bench::measure_hits(p, Locality::kNode);
    const Sample remote = larder::bench::measure_hits(p, Locality::kRemote);
    if (rank == 0) {
      fmt::print(
          "{:>6} | {:>8.2f} | {:>8.2f} {:>6.2f} | {:>8.2f} {:>6.2f} | {:>8.2f} {:>6.2f} | {:>9.1f} "
          "{:>9.1f}\n",
          size_label(size), mem.gbps(), self.gbps(), self.gbps() / mem.gbps(), node.gbps(),
          node.gbps() / mem.gbps(), remote.gbps(), remote.gbps() / mem.gbps(), node.usec_per_op(),
          remote.usec_per_op());
      std::fflush(stdout);
      out.push_back({{"size", size},
                     {"memcpy", to_json(mem)},
                     {"self", to_json(self)},
                     {"node", to_json(node)},
                     {"remote", to_json(remote)}});
    }
  }
  return out;
}

// What checking costs: XXH3-64 against memcpy on this core, and remote reads (every read crosses
// the transport: the reader's node keeps no copy) with LARDER_VERIFY on and off, side by side:
// `repeat` pairs per size, in alternating order (off first, then on first), so that neither
// setting always runs on a warmer machine; medians of each and of the pairs' ratios.
nlohmann::json run_verify(const Args& a, int rank) {
  nlohmann::json out = nlohmann::json::array();
  if (rank == 0) {
    fmt::print(
        "{:>6} | {:>8} | {:>8} {:>6} | {:>10} {:>10} {:>7} | {:>9} {:>9} {:>7}   ({} pairs, "
        "medians)\n",
        "size", "memcpy", "xxh3", "ratio", "remote off", "remote on", "on/off", "disk off",
        "disk on", "on/off", a.repeat);
    fmt::print("{:>6} | {:>8} | {:>15} | {:>10} {:>10} {:>7} | {:>9} {:>9} {:>7}\n", "", "GB/s",
               "GB/s  x memcpy", "GB/s", "GB/s", "", "GB/s", "GB/s", "");
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0
                     : (v.size() % 2 == 1 ? v[v.size() / 2]
                                          : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
  };
  // How far the median of the pairs' ratios can be trusted: a 95 % interval by bootstrap (the
  // median of 2,000 resamplings of the pairs with replacement; a fixed seed, so that the same
  // pairs give the same interval).
  auto median_interval = [&median](const std::vector<double>& v) -> std::pair<double, double> {
    if (v.size() < 2) return {median(v), median(v)};
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<std::size_t> pick(0, v.size() - 1);
    std::vector<double> medians(2000);
    std::vector<double> resample(v.size());
    for (double& m : medians) {
      for (double& x : resample) x = v[pick(rng)];
      m = median(resample);
    }
    std::sort(medians.begin(), medians.end());
    return {medians[50], medians[1949]};
  };
  for (std::uint64_t size : a.sizes) {
    Plan p = plan_for(a, size, a.transport);
    Sample mem;
    Sample hash;
    Sample hash_cached;
    if (rank == 0) {
      mem = larder::bench::measure_memcpy(p);
      hash = larder::bench::measure_hash(p);
      hash_cached = larder::bench::measure_hash_cached(p);
    }
    std::vector<double> offs;
    std::vector<double> ons;
    std::vector<double> ratios;
    std::vector<double> disk_offs;
    std::vector<double> disk_ons;
    std::vector<double> disk_ratios;
    std::vector<double> reader_off;  // CPU ns per byte read
    std::vector<double> reader_on;
    std::vector<double> serving_off;
    std::vector<double> serving_on;
    std::vector<double> busy_off;  // cores Larder's threads of both ranks kept busy
    std::vector<double> busy_on;
    nlohmann::json pairs = nlohmann::json::array();
    for (unsigned k = 0; k < a.repeat; ++k) {
      Sample off;
      Sample on;
      Sample disk_off;
      Sample disk_on;
      for (const bool verify : {k % 2 == 1, k % 2 == 0}) {
        p.verify = verify;
        (verify ? on : off) = larder::bench::measure_hits(p, Locality::kRemote);
        // Hits on the node from another rank's disk tier, pages in memory: what asking the
        // kernel about them costs (with LARDER_VERIFY=off nothing is asked).
        p.disk = true;
        (verify ? disk_on : disk_off) = larder::bench::measure_hits(p, Locality::kNode);
        p.disk = false;
      }
      offs.push_back(off.gbps());
      ons.push_back(on.gbps());
      ratios.push_back(off.gbps() > 0 ? on.gbps() / off.gbps() : 0.0);
      reader_off.push_back(off.reader_ns_per_byte());
      reader_on.push_back(on.reader_ns_per_byte());
      serving_off.push_back(off.serving_ns_per_byte());
      serving_on.push_back(on.serving_ns_per_byte());
      auto busy = [](const Sample& x) {
        return x.seconds > 0 ? (x.reader_cpu_s + x.serving_cpu_s) / x.seconds : 0.0;
      };
      busy_off.push_back(busy(off));
      busy_on.push_back(busy(on));
      disk_offs.push_back(disk_off.gbps());
      disk_ons.push_back(disk_on.gbps());
      disk_ratios.push_back(disk_off.gbps() > 0 ? disk_on.gbps() / disk_off.gbps() : 0.0);
      pairs.push_back({{"remote_verify_off", to_json(off)},
                       {"remote_verify_on", to_json(on)},
                       {"disk_node_verify_off", to_json(disk_off)},
                       {"disk_node_verify_on", to_json(disk_on)}});
    }
    if (rank == 0) {
      fmt::print(
          "{:>6} | {:>8.2f} | {:>8.2f} {:>6.2f} | {:>10.3f} {:>10.3f} {:>7.3f} | {:>9.2f} {:>9.2f} "
          "{:>7.3f}\n",
          size_label(size), mem.gbps(), hash.gbps(), hash.gbps() / mem.gbps(), median(offs),
          median(ons), median(ratios), median(disk_offs), median(disk_ons), median(disk_ratios));
      // How far the remote on/off median can be trusted, and where the time goes: CPU per byte
      // of the remote reads (the reader's process, the serving rank's threads other than its
      // main one) against what the hash alone costs, and the cores those threads kept busy.
      const auto [lo, hi] = median_interval(ratios);
      fmt::print(
          "{:>6} | remote on/off: 95 % interval of the median {:.3f}-{:.3f}, pairs {:.2f}-{:.2f}\n",
          "", lo, hi, *std::min_element(ratios.begin(), ratios.end()),
          *std::max_element(ratios.begin(), ratios.end()));
      fmt::print(
          "{:>6} | CPU ns/B: reader off {:.3f} on {:.3f}, serving off {:.3f} on {:.3f}; xxh3 "
          "alone {:.3f} ({:.3f} in cache, {:.1f} GB/s); cores busy off {:.2f} on {:.2f}\n",
          "", median(reader_off), median(reader_on), median(serving_off), median(serving_on),
          hash.gbps() > 0 ? 1.0 / hash.gbps() : 0.0,
          hash_cached.gbps() > 0 ? 1.0 / hash_cached.gbps() : 0.0, hash_cached.gbps(),
          median(busy_off), median(busy_on));
      std::fflush(stdout);
      out.push_back({{"size", size},
                     {"memcpy", to_json(mem)},
                     {"xxh3", to_json(hash)},
                     {"xxh3_cached", to_json(hash_cached)},
                     {"pairs", pairs},
                     {"median_ratio", median(ratios)},
                     {"median_ratio_interval", {lo, hi}},
                     {"cores_busy_off", median(busy_off)},
                     {"cores_busy_on", median(busy_on)},
                     {"reader_ns_per_byte_off", median(reader_off)},
                     {"reader_ns_per_byte_on", median(reader_on)},
                     {"serving_ns_per_byte_off", median(serving_off)},
                     {"serving_ns_per_byte_on", median(serving_on)},
                     {"disk_median_ratio", median(disk_ratios)}});
    }
  }
  return out;
}

nlohmann::json run_transports(const Args& a, int rank) {
  nlohmann::json out = nlohmann::json::array();
  if (rank == 0) {
    fmt::print("{:>6} | {:>9} {:>10} | {:>9} {:>10} | {:>8}\n", "size", "ucx GB/s", "ucx us/op",
               "mpi GB/s", "mpi us/op", "ucx/mpi");
  }
  for (std::uint64_t size : a.sizes) {
    const Sample ucx = larder::bench::measure_hits(plan_for(a, size, "ucx"), Locality::kRemote);
    const Sample mpi = larder::bench::measure_hits(plan_for(a, size, "mpi"), Locality::kRemote);
    if (rank == 0) {
      fmt::print("{:>6} | {:>9.3f} {:>10.1f} | {:>9.3f} {:>10.1f} | {:>8.2f}\n", size_label(size),
                 ucx.gbps(), ucx.usec_per_op(), mpi.gbps(), mpi.usec_per_op(),
                 ucx.gbps() / mpi.gbps());
      std::fflush(stdout);
      out.push_back({{"size", size}, {"ucx", to_json(ucx)}, {"mpi", to_json(mpi)}});
    }
  }
  return out;
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// CPU time of this process (all its threads) while the application sleeps `seconds`.
double idle_cpu(unsigned seconds) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double before = cpu_seconds();
  ::sleep(seconds);
  return cpu_seconds() - before;
}

// The cost of Larder's threads on a rank that does nothing: the same sleep without Larder,
// then with it started (after one cached read, so its transport is connected), per transport.
nlohmann::json run_idle(const Args& a, int rank) {
  const std::string file = a.dir + "/idle.bin";
  if (rank == 0) {
    std::vector<char> data(1 << 20, 'x');
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
      throw std::runtime_error("cannot write " + file);
    }
    ::close(fd);
  }
  const double plain = idle_cpu(a.seconds);
  nlohmann::json out = {{"seconds", a.seconds}, {"plain_cpu_s", plain}};
  for (const char* transport : {"ucx", "mpi"}) {
    ::setenv("LARDER_PREFIX", a.dir.c_str(), 1);
    ::setenv("LARDER_LOCAL_FS", "cache", 1);
    ::setenv("LARDER_NODE_SIZE", "1", 1);
    ::setenv("LARDER_TRANSPORT", transport, 1);
    if (larder_init(MPI_COMM_WORLD) != LARDER_OK) {
      throw std::runtime_error(std::string("larder_init: ") + larder_last_error());
    }
    std::vector<char> buf(1 << 20);
    const int fd = larder_open(file.c_str(), O_RDONLY);
    if (fd >= 0) {
      (void)larder_pread(fd, buf.data(), buf.size(), 0);
      larder_close(fd);
    }
    const double cached = idle_cpu(a.seconds);
    larder_finalize();
    double most = 0;
    MPI_Reduce(&cached, &most, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      fmt::print(
          "{:>4}: idle {} s: CPU {:.3f} s without Larder, {:.3f} s with it (busiest rank), "
          "{:.2f} % of a core\n",
          transport, a.seconds, plain, most, 100.0 * most / a.seconds);
      std::fflush(stdout);
    }
    out[transport] = {{"cpu_s", most}};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Args a;
  std::string sizes = "4K,16K,64K,256K,1M,4M,16M,64M", bytes = "1G", footprint = "256M";
  std::string waiting = "spin";
  po::options_description desc(
      "larder-readbench MODE (tiers | transports | verify | idle) [options]");
  desc.add_options()("help,h", "show this help")("mode", po::value(&a.mode),
                                                 "tiers, transports, verify or idle")(
      "seconds", po::value(&a.seconds)->default_value(a.seconds), "idle: how long to sleep")(
      "dir", po::value(&a.dir)->default_value("/tmp/larder-readbench"),
      "directory for the test files")("sizes", po::value(&sizes)->default_value(sizes),
                                      "comma-separated read (= chunk) sizes")(
      "bytes", po::value(&bytes)->default_value(bytes), "bytes read per measurement")(
      "repeat", po::value(&a.repeat)->default_value(a.repeat),
      "verify: pairs of runs (off and on) per size")(
      "footprint", po::value(&footprint)->default_value(footprint),
      "file size per chunk size (4..4096 chunks)")(
      "transport", po::value(&a.transport)->default_value(a.transport),
      "verify: the transport of the remote reads, ucx or mpi")(
      "waiting", po::value(&waiting)->default_value(waiting),
      "how the other ranks wait while one reads: spin (in MPI_Barrier) or sleep")(
      "json", po::value(&a.json), "also write the samples as JSON here");
  po::positional_options_description pos;
  pos.add("mode", 1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help") || a.mode.empty()) {
      if (rank == 0) std::cout << desc << "\n";
      MPI_Finalize();
      return vm.count("help") ? 0 : 2;
    }
    if (a.mode != "tiers" && a.mode != "transports" && a.mode != "verify" && a.mode != "idle")
      throw std::invalid_argument("MODE must be tiers, transports, verify or idle");
    if (waiting != "spin" && waiting != "sleep")
      throw std::invalid_argument("--waiting must be spin or sleep (got '" + waiting + "')");
    a.waiters_sleep = waiting == "sleep";
    if (a.transport != "ucx" && a.transport != "mpi")
      throw std::invalid_argument("--transport must be ucx or mpi (got '" + a.transport + "')");
    if (size < 2) throw std::invalid_argument("run with at least 2 ranks (mpiexec -n 2)");
    for (std::size_t s = 0; s < sizes.size();) {
      const std::size_t e = sizes.find(',', s);
      a.sizes.push_back(parse_size(sizes.substr(s, e == std::string::npos ? e : e - s)));
      s = e == std::string::npos ? sizes.size() : e + 1;
    }
    if (a.repeat == 0) throw std::invalid_argument("--repeat must be at least 1");
    a.bytes = parse_size(bytes);
    a.footprint = parse_size(footprint);
  } catch (const std::exception& e) {
    if (rank == 0) fmt::print(stderr, "larder-readbench: {}\n", e.what());
    MPI_Finalize();
    return 2;
  }
  if (rank == 0) ::mkdir(a.dir.c_str(), 0755);
  nlohmann::json results;
  try {
    results = a.mode == "tiers"        ? run_tiers(a, rank)
              : a.mode == "transports" ? run_transports(a, rank)
              : a.mode == "verify"     ? run_verify(a, rank)
                                       : run_idle(a, rank);
  } catch (const std::exception& e) {
    fmt::print(stderr, "larder-readbench: rank {}: {}\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0 && !a.json.empty()) {
    std::ofstream(a.json) << nlohmann::json{{"mode", a.mode},
                                            {"ranks", size},
                                            {"waiting", a.waiters_sleep ? "sleep" : "spin"},
                                            {"transport", a.transport},
                                            {"results", results}}
                                 .dump(2)
                          << "\n";
  }
  MPI_Finalize();
  return 0;
}
