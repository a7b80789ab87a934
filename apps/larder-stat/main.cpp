// larder-stat: reads the stats JSON a job wrote (LARDER_STATS) and says what the cache did.
//
//   larder-stat STATS.json              the job: PFS traffic against what the application read,
//                                       where chunk reads were served from, latency histogram
//   larder-stat BEFORE.json AFTER.json  two jobs side by side, with AFTER/BEFORE ratios
//
// Keys missing from a file (an older Larder, a hand-trimmed file) print as "-". A file that
// cannot be read or is not JSON stops the tool with one message and exit status 2.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace po = boost::program_options;
using nlohmann::json;

namespace {

// A counter by its dotted name ("pfs.bytes_read"); nullopt when absent or not a number.
std::optional<std::uint64_t> counter(const json& stats, std::string dotted) {
  std::replace(dotted.begin(), dotted.end(), '.', '/');
  try {
    const json::json_pointer ptr("/" + dotted);
    if (!stats.contains(ptr)) return std::nullopt;
    const json& v = stats.at(ptr);
    if (!v.is_number_unsigned() && !v.is_number_integer()) return std::nullopt;
    return v.get<std::uint64_t>();
  } catch (const json::exception&) {  // a path through an array or a scalar
    return std::nullopt;
  }
}

std::string size_text(double bytes) {
  static constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t u = 0;
  while (bytes >= 1024.0 && u + 1 < kUnits.size()) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[u]);
}

std::string time_text(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.1f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.1f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

std::string num(const std::optional<std::uint64_t>& v) {
  return v ? fmt::format("{}", *v) : "-";
}
std::string bytes(const std::optional<std::uint64_t>& v) {
  return v ? size_text(static_cast<double>(*v)) : "-";
}
std::string share(std::optional<std::uint64_t> part, std::uint64_t whole) {
  if (!part || whole == 0) return "";
  return fmt::format(" ({:.1f}%)", 100.0 * static_cast<double>(*part) / static_cast<double>(whole));
}

json load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path));
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw std::runtime_error(fmt::format("{} is not a Larder stats JSON object", path));
  return j;
}

void print_histogram(const json& stats) {
  const json* h = nullptr;
  if (stats.contains("latency") && stats["latency"].contains("histogram_log2_ns"))
    h = &stats["latency"]["histogram_log2_ns"];
  if (h == nullptr || !h->is_array()) return;
  std::vector<std::uint64_t> counts;
  for (const json& v : *h) counts.push_back(v.is_number() ? v.get<std::uint64_t>() : 0);
  std::uint64_t peak = 0;
  std::size_t first = counts.size();
  std::size_t last = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    peak = std::max(peak, counts[i]);
    first = std::min(first, i);
    last = i;
  }
  if (peak == 0) return;
  std::cout << "  read latency histogram (bucket i holds [2^i, 2^(i+1)) ns):\n";
  for (std::size_t i = first; i <= last; ++i) {
    const auto width = static_cast<std::size_t>(
        std::lround(40.0 * static_cast<double>(counts[i]) / static_cast<double>(peak)));
    std::cout << fmt::format("  {:>9} .. {:>9} {:>9} ",
                             time_text(std::ldexp(1.0, static_cast<int>(i))),
                             time_text(std::ldexp(1.0, static_cast<int>(i) + 1)), counts[i])
              << std::string(width, '#') << "\n";
  }
}

// The per-rank load (the "skew" section): a hot spot is a max far above the median.
void print_skew(const json& s) {
  if (!s.contains("skew")) return;
  std::cout << "load per rank        max (rank)          median        total\n";
  const std::vector<std::pair<const char*, const char*>> rows = {
      {"bytes served", "bytes_served"},
      {"directory ops rcvd", "directory_ops_received"},
      {"remote fetches", "remote_fetches"},
      {"wait time", "wait_ns"},
  };
  for (const auto& [label, key] : rows) {
    const auto& d = s["skew"][key];
    auto v = [&](const char* f) { return d.value(f, std::uint64_t{0}); };
    const bool b = std::string_view(key) == "bytes_served";
    const bool t = std::string_view(key) == "wait_ns";
    auto text = [&](std::uint64_t x) {
      return b   ? bytes(x)
             : t ? time_text(static_cast<double>(x))
                 : num(std::optional<std::uint64_t>(x));
    };
    std::cout << fmt::format("  {:<18} {:>12} ({:>4}) {:>12} {:>12}\n", label, text(v("max")),
                             d.value("max_rank", 0), text(v("median")), text(v("total")));
  }
}

// Node groups, node files and shared objects, produced files: a line each, when the job had any.
void print_files(const json& s) {
  const auto nonzero = [&](const char* key) { return counter(s, key).value_or(0) > 0; };
  if (nonzero("group.answers")) {
    std::cout << fmt::format("node groups       {} answers from the node's group\n",
                             num(counter(s, "group.answers")));
  }
  if (nonzero("node.files") || nonzero("node.file_no_room") || nonzero("node.file_failed")) {
    std::cout << fmt::format(
        "node files        {} ({}), mapped {} times ({} by workers); {} held twice;\n"
        "                  {} not made for want of room, {} failed\n",
        num(counter(s, "node.files")), bytes(counter(s, "node.file_bytes")),
        num(counter(s, "node.file_maps")), num(counter(s, "node.file_maps_workers")),
        bytes(counter(s, "node.file_dup_bytes")), num(counter(s, "node.file_no_room")),
        num(counter(s, "node.file_failed")));
  }
  if (nonzero("loader.objects") || nonzero("loader.original")) {
    std::cout << fmt::format(
        "shared objects    {} from node files, {} answered missing, {} from the original path\n",
        num(counter(s, "loader.objects")), num(counter(s, "loader.absent")),
        num(counter(s, "loader.original")));
  }
  if (nonzero("produce.files") || nonzero("produce.waits") || nonzero("produce.refused")) {
    std::cout << fmt::format(
        "produced files    {} ({}), {} written to the PFS; {} opens refused;\n"
        "                  readers waited {} times for files not yet published ({})\n",
        num(counter(s, "produce.files")), bytes(counter(s, "produce.bytes")),
        bytes(counter(s, "produce.pfs_bytes")), num(counter(s, "produce.refused")),
        num(counter(s, "produce.waits")),
        time_text(static_cast<double>(counter(s, "produce.wait_ns").value_or(0))));
  }
  if (nonzero("kept.bytes_adopted") || nonzero("kept.bytes_kept") ||
      nonzero("kept.bytes_evicted") || nonzero("kept.bytes_dropped_changed") ||
      nonzero("kept.bytes_dropped_unfinished") || nonzero("kept.answers_kept")) {
    std::cout << fmt::format(
        "earlier steps     {} adopted ({} chunks, {} kept files); {} kept for later steps;\n"
        "                  {} evicted, {} to the disk tier, {} dropped (file changed), {} dropped "
        "(writer unfinished)\n"
        "                  {} stat answers and listings adopted, {} kept\n",
        bytes(counter(s, "kept.bytes_adopted")), num(counter(s, "kept.chunks_adopted")),
        num(counter(s, "kept.files_adopted")), bytes(counter(s, "kept.bytes_kept")),
        bytes(counter(s, "kept.bytes_evicted")), bytes(counter(s, "kept.bytes_demoted")),
        bytes(counter(s, "kept.bytes_dropped_changed")),
        bytes(counter(s, "kept.bytes_dropped_unfinished")), num(counter(s, "kept.answers_adopted")),
        num(counter(s, "kept.answers_kept")));
  }
  if (nonzero("integrity.bytes_hashed")) {
    std::cout << fmt::format(
        "integrity         {} checks, {} hashed in {}; {} mismatches, {} read again ({} taken "
        "from the PFS once for a node), {} holders marked bad\n",
        num(counter(s, "integrity.checked")), bytes(counter(s, "integrity.bytes_hashed")),
        time_text(static_cast<double>(counter(s, "integrity.ns").value_or(0))),
        num(counter(s, "integrity.mismatches")), num(counter(s, "integrity.refetched")),
        num(counter(s, "integrity.reloaded")), num(counter(s, "integrity.holders_marked")));
  }
}

void print_one(const json& s) {
  const auto app = counter(s, "app.bytes_read");
  const auto pfs = counter(s, "pfs.bytes_read");
  std::cout << fmt::format("job of {} ranks\n", num(counter(s, "ranks")));
  std::cout << fmt::format("application read  {} in {} calls\n", bytes(app),
                           num(counter(s, "app.read_calls")));
  std::cout << fmt::format(
      "PFS served        {} in {} reads; {} path lookups, {} listings, {} opens\n", bytes(pfs),
      num(counter(s, "pfs.read_ops")), num(counter(s, "pfs.stat_ops")),
      num(counter(s, "pfs.list_ops")), num(counter(s, "pfs.open_ops")));
  if (app && pfs && *pfs > 0) {
    std::cout << fmt::format("                  the application read {:.1f}x what the PFS served\n",
                             static_cast<double>(*app) / static_cast<double>(*pfs));
  }
  const auto self = counter(s, "hits.self");
  const auto node = counter(s, "hits.node");
  const auto remote = counter(s, "hits.remote");
  const auto misses = counter(s, "misses");
  const auto fallbacks = counter(s, "fallbacks");
  std::uint64_t chunk_reads = 0;
  for (const auto& v : {self, node, remote, misses, fallbacks}) chunk_reads += v.value_or(0);
  std::cout << fmt::format("chunk reads       {}\n", chunk_reads);
  const std::vector<std::pair<const char*, std::optional<std::uint64_t>>> sources = {
      {"own arena", self},
      {"a node peer's arena", node},
      {"another node", remote},
      {"loaded from the PFS", misses},
      {"read around the cache", fallbacks},
  };
  for (const auto& [what, v] : sources) {
    std::cout << fmt::format("  {:<24} {:>12}{}\n", what, num(v), share(v, chunk_reads));
  }
  std::cout << fmt::format("by tier           memory {}, disk {}\n",
                           num(counter(s, "hits.tier.mem")), num(counter(s, "hits.tier.disk")));
  std::cout << fmt::format("metadata          {} answers from the cache, {} from the PFS\n",
                           num(counter(s, "meta.hits")), num(counter(s, "meta.misses")));
  std::cout << fmt::format(
      "loaded ahead      {} chunks loaded before any read (an open, list-ahead, read-ahead); "
      "directories resolved ahead: {} in the background, {} in the listing call ({} small files "
      "left on another node: the listed tree is larger than the node's budget); {} chunks ({}) "
      "made ready ahead of in-order reads\n",
      num(counter(s, "prefetches")), num(counter(s, "list_ahead.background")),
      num(counter(s, "list_ahead.inline")), num(counter(s, "list_ahead.not_copied")),
      num(counter(s, "readahead.chunks")), bytes(counter(s, "readahead.bytes")));
  std::cout << fmt::format(
      "told the order    {} schedule entries; {} chunks ({}) made ready on their node ahead, {} "
      "of them from the PFS; {} entries skipped (nothing to cache), {} behind the reported "
      "position, {} "
      "batches past the node's budget; {} chunks ({}) read ahead into the ranks' stages past "
      "it, {} ({}) copied there from other nodes, {} reads served from there, {} times a stage "
      "was full, {} chunks ({}) dropped from a stage for one used sooner; {} reads found their "
      "chunk "
      "made ready ahead, {} waited for its prefetch ({}); {} chunks ({}) made ready or staged "
      "that no read used\n",
      num(counter(s, "prefetch.entries")), num(counter(s, "prefetch.chunks")),
      bytes(counter(s, "prefetch.bytes")), bytes(counter(s, "prefetch.loaded_bytes")),
      num(counter(s, "prefetch.skipped")), num(counter(s, "prefetch.passed")),
      num(counter(s, "prefetch.no_room")), num(counter(s, "prefetch.staged_chunks")),
      bytes(counter(s, "prefetch.staged_bytes")), num(counter(s, "prefetch.copied_chunks")),
      bytes(counter(s, "prefetch.copied_bytes")), num(counter(s, "prefetch.staged_reads")),
      num(counter(s, "prefetch.stage_full")), num(counter(s, "prefetch.evicted_chunks")),
      bytes(counter(s, "prefetch.evicted_bytes")), num(counter(s, "prefetch.ready")),
      num(counter(s, "prefetch.waited")),
      time_text(static_cast<double>(counter(s, "prefetch.wait_ns").value_or(0))),
      num(counter(s, "prefetch.unused_chunks")), bytes(counter(s, "prefetch.unused_bytes")));
  std::cout << fmt::format("between nodes     {} in {} gets, {} errors; {} messages\n",
                           bytes(counter(s, "transport.bytes")), num(counter(s, "transport.gets")),
                           num(counter(s, "transport.errors")),
                           num(counter(s, "transport.messages")));
  std::cout << fmt::format(
      "node sharing      {} answers found in the node table; {} chunks ({})\n"
      "                  copied from another node for the whole node\n",
      num(counter(s, "node.answers")), num(counter(s, "node.copies")),
      bytes(counter(s, "node.copy_bytes")));
  const auto wait_ns = counter(s, "wait_ns");
  std::cout << fmt::format("waits             {} for an entry another rank was loading ({})\n",
                           num(counter(s, "waits")),
                           time_text(static_cast<double>(wait_ns.value_or(0))));
  std::cout << fmt::format("directory         {} lookups, {} of them asked again\n",
                           num(counter(s, "directory.ops")), num(counter(s, "directory.retries")));
  if (counter(s, "directory.overflow_entries").value_or(0) > 0 ||
      counter(s, "directory.refused").value_or(0) > 0) {
    std::cout << fmt::format(
        "                  {} entries in overflow tables ({} requests), {} refused (full)\n",
        num(counter(s, "directory.overflow_entries")),
        num(counter(s, "directory.overflow_requests")), num(counter(s, "directory.refused")));
  }
  print_files(s);
  print_skew(s);
  std::cout << fmt::format("cache at the end  {} in {} chunks\n", bytes(counter(s, "cache.bytes")),
                           num(counter(s, "cache.chunks")));
  const auto reads = counter(s, "latency.reads");
  if (reads && *reads > 0) {
    std::cout << fmt::format(
        "read latency      {} reads: mean {}, p50 < {}, p99 < {}, max {}\n", *reads,
        time_text(static_cast<double>(counter(s, "latency.mean_ns").value_or(0))),
        time_text(static_cast<double>(counter(s, "latency.p50_ns").value_or(0))),
        time_text(static_cast<double>(counter(s, "latency.p99_ns").value_or(0))),
        time_text(static_cast<double>(counter(s, "latency.max_ns").value_or(0))));
  }
  print_histogram(s);
}

void print_two(const json& a, const json& b, const std::string& name_a, const std::string& name_b) {
  static constexpr std::array<std::pair<const char*, bool>, 18> kRows = {{
      {"ranks", false},
      {"app.bytes_read", true},
      {"app.read_calls", false},
      {"pfs.bytes_read", true},
      {"pfs.read_ops", false},
      {"pfs.stat_ops", false},
      {"pfs.list_ops", false},
      {"hits.self", false},
      {"hits.node", false},
      {"hits.remote", false},
      {"misses", false},
      {"node.copies", false},
      {"directory.ops", false},
      {"skew.bytes_served.max", true},
      {"fallbacks", false},
      {"transport.bytes", true},
      {"latency.mean_ns", false},
      {"latency.p99_ns", false},
  }};
  std::cout << fmt::format("{:<18} {:>14} {:>14} {:>9}\n", "", name_a.substr(0, 14),
                           name_b.substr(0, 14), "ratio");
  for (const auto& [key, is_bytes] : kRows) {
    const auto va = counter(a, key);
    const auto vb = counter(b, key);
    const std::string ratio =
        va && vb && *va > 0
            ? fmt::format("{:.3f}", static_cast<double>(*vb) / static_cast<double>(*va))
            : "-";
    std::cout << fmt::format("{:<18} {:>14} {:>14} {:>9}\n", key, is_bytes ? bytes(va) : num(va),
                             is_bytes ? bytes(vb) : num(vb), ratio);
  }
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description visible(
      "larder-stat STATS.json [OTHER.json]: what the cache did in a job (from LARDER_STATS);\n"
      "with two files, the two jobs side by side with OTHER/STATS ratios. Options");
  visible.add_options()("help,h", "show this help");
  po::options_description all;
  all.add(visible).add_options()("file", po::value<std::vector<std::string>>(), "stats files");
  po::positional_options_description pos;
  pos.add("file", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "larder-stat: " << e.what() << "\n" << visible;
    return 2;
  }
  const auto files =
      vm.count("file") ? vm["file"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (vm.count("help")) {
    std::cout << visible;
    return 0;
  }
  if (files.empty() || files.size() > 2) {
    std::cerr << "larder-stat: give one stats file, or two to compare\n" << visible;
    return 2;
  }
  try {
    if (files.size() == 1) {
      print_one(load(files[0]));
    } else {
      print_two(load(files[0]), load(files[1]), files[0], files[1]);
    }
  } catch (const std::exception& e) {
    std::cerr << "larder-stat: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
