// larder-stage: copies trees from the parallel file system to node-local storage on every node
// of a job, reading each byte from the PFS once.
//
//   mpiexec -n N larder-stage --to /tmp/env /lus/envs/torch /lus/data/small
//
// Each PATH (a directory or a file) arrives as DIR/<its last name> on every node, like `cp -a`:
// directories, regular files (bytes, mode, modification time) and symlinks (as links). Rank 0
// walks the sources once and sends the list to all; larder_stage loads every file into the
// job's cache, each chunk read from the PFS by one rank; then the ranks of each node write that
// node's copy, splitting the files between them, reading through the cache (node-local memory,
// or another node over the transport). "{node}" in DIR is replaced by the node's index (useful
// when nodes share a file system, and for testing with LARDER_NODE_SIZE, which this tool honours
// as Larder does: groups of that many consecutive ranks are nodes).
//
// Exit status: 0 when every entry was copied; 1 when some were not (each is reported); 2 for a
// bad command line or a failure to start.
#include <fcntl.h>
#include <larder/larder.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace po = boost::program_options;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::size_t kBlock = 4 << 20;  // bytes per read/write of a copy

enum class Kind { kDir, kFile, kLink };

struct Entry {
  std::string source;  // absolute path on the PFS
  std::string target;  // relative to the destination directory
  Kind kind = Kind::kFile;
  std::uint32_t mode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_sec = 0;
  std::int64_t mtime_nsec = 0;
  std::string link;  // the symlink's contents
};

void to_json(json& j, const Entry& e) {
  j = json{{"s", e.source},      {"t", e.target}, {"k", static_cast<int>(e.kind)},
           {"m", e.mode},        {"z", e.size},   {"ts", e.mtime_sec},
           {"tn", e.mtime_nsec}, {"l", e.link}};
}

void from_json(const json& j, Entry& e) {
  e.source = j.at("s").get<std::string>();
  e.target = j.at("t").get<std::string>();
  e.kind = static_cast<Kind>(j.at("k").get<int>());
  e.mode = j.at("m").get<std::uint32_t>();
  e.size = j.at("z").get<std::uint64_t>();
  e.mtime_sec = j.at("ts").get<std::int64_t>();
  e.mtime_nsec = j.at("tn").get<std::int64_t>();
  e.link = j.at("l").get<std::string>();
}

// The walk of the sources, on rank 0: entries in creation order (a directory before what it
// holds), and the paths that could not be read.
struct Walk {
  std::vector<Entry> entries;
  std::vector<std::string> errors;
};

void add(Walk& w, const std::string& source, const std::string& target, bool follow) {
  struct stat st {};
  const int rc = follow ? ::stat(source.c_str(), &st) : ::lstat(source.c_str(), &st);
  if (rc != 0) {
    w.errors.push_back(fmt::format("{}: {}", source, std::strerror(errno)));
    return;
  }
  Entry e;
  e.source = source;
  e.target = target;
  e.mode = st.st_mode & 07777;
  e.mtime_sec = st.st_mtim.tv_sec;
  e.mtime_nsec = st.st_mtim.tv_nsec;
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    e.kind = Kind::kLink;
    e.link = fs::read_symlink(source, ec).string();
    if (ec) {
      w.errors.push_back(fmt::format("{}: {}", source, ec.message()));
      return;
    }
    w.entries.push_back(std::move(e));
  } else if (S_ISREG(st.st_mode)) {
    e.kind = Kind::kFile;
    e.size = static_cast<std::uint64_t>(st.st_size);
    w.entries.push_back(std::move(e));
  } else if (S_ISDIR(st.st_mode)) {
    e.kind = Kind::kDir;
    w.entries.push_back(std::move(e));
    std::error_code ec;
    std::vector<std::string> names;
    for (fs::directory_iterator it(source, ec), end; !ec && it != end; it.increment(ec)) {
      names.push_back(it->path().filename().string());
    }
    if (ec) {
      w.errors.push_back(fmt::format("{}: {}", source, ec.message()));
      return;
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      add(w, fmt::format("{}/{}", source, n), fmt::format("{}/{}", target, n), false);
    }
  } else {
    w.errors.push_back(fmt::format("{}: not a file, directory or symlink; not copied", source));
  }
}

// Rank 0's list, sent to every rank (a JSON document: lists are small next to the data).
std::vector<Entry> share(const std::vector<Entry>& mine, int rank) {
  std::string text = rank == 0 ? json(mine).dump() : std::string();
  std::uint64_t n = text.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  text.resize(n);
  for (std::uint64_t off = 0; off < n;) {
    const int piece = static_cast<int>(std::min<std::uint64_t>(n - off, 1 << 30));
    MPI_Bcast(text.data() + off, piece, MPI_CHAR, 0, MPI_COMM_WORLD);
    off += static_cast<std::uint64_t>(piece);
  }
  return rank == 0 ? mine : json::parse(text).get<std::vector<Entry>>();
}

// The node of every rank: LARDER_NODE_SIZE groups if set, else the ranks sharing memory, the
// nodes numbered in the order of their first ranks.
int node_index(int rank) {
  if (const char* k = std::getenv("LARDER_NODE_SIZE"); k != nullptr && std::atoi(k) > 0) {
    return rank / std::atoi(k);
  }
  MPI_Comm shared = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
  int local = 0;
  MPI_Comm_rank(shared, &local);
  MPI_Comm leaders = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, local == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
  int index = 0;
  if (leaders != MPI_COMM_NULL) {
    MPI_Comm_rank(leaders, &index);
    MPI_Comm_free(&leaders);
  }
  MPI_Bcast(&index, 1, MPI_INT, 0, shared);  // the leader's number, to its node
  MPI_Comm_free(&shared);
  return index;
}

std::string destination(std::string dir, int node) {
  for (std::size_t at = dir.find("{node}"); at != std::string::npos; at = dir.find("{node}"))
    dir.replace(at, 6, std::to_string(node));
  return dir;
}

// Copies one regular file through the cache; "" on success, else what went wrong.
std::string copy_file(const Entry& e, const std::string& to, std::vector<char>& buf,
                      std::uint64_t& copied) {
  const int in = larder_open(e.source.c_str(), O_RDONLY);
  if (in < 0) return fmt::format("{}: {}", e.source, std::strerror(errno));
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) {
    const int err = errno;
    larder_close(in);
    return fmt::format("{}: {}", to, std::strerror(err));
  }
  std::string error;
  std::uint64_t off = 0;
  while (error.empty() && off < e.size) {
    const ssize_t n = larder_pread(
        in, buf.data(), std::min<std::uint64_t>(buf.size(), e.size - off), static_cast<off_t>(off));
    if (n <= 0) {
      error = n == 0 ? fmt::format("{}: shorter than when it was listed", e.source)
                     : fmt::format("{}: {}", e.source, std::strerror(errno));
      break;
    }
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::pwrite(out, buf.data() + done, static_cast<std::size_t>(n - done),
                                 static_cast<off_t>(off) + done);
      if (w < 0) {
        error = fmt::format("{}: {}", to, std::strerror(errno));
        break;
      }
      done += w;
    }
    off += static_cast<std::uint64_t>(n);
    copied += static_cast<std::uint64_t>(n);
  }
  const timespec times[2] = {{e.mtime_sec, e.mtime_nsec}, {e.mtime_sec, e.mtime_nsec}};
  if (error.empty() && (::fchmod(out, e.mode) != 0 || ::futimens(out, times) != 0))
    error = fmt::format("{}: {}", to, std::strerror(errno));
  if (::close(out) != 0 && error.empty()) error = fmt::format("{}: {}", to, std::strerror(errno));
  larder_close(in);
  return error;
}

int run(const std::vector<std::string>& sources, const std::string& to_pattern, int rank) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // 1. Rank 0 walks the sources once.
  Walk walk;
  if (rank == 0) {
    for (const std::string& s : sources) {
      const fs::path p = fs::absolute(s).lexically_normal();
      std::string name = p.filename().string();
      if (name.empty()) name = p.parent_path().filename().string();
      add(walk, p.string(), name.empty() ? "root" : name, true);
    }
  }
  const std::vector<Entry> entries = share(walk.entries, rank);
  const auto walked = Clock::now();

  // 2. Every file into the job's cache, each chunk read from the PFS once.
  if (larder_init(MPI_COMM_WORLD) != LARDER_OK) {
    fmt::print(stderr, "larder-stage: larder_init failed: {}\n", larder_last_error());
    return 2;
  }
  const auto started = Clock::now();
  std::vector<const char*> files;
  std::uint64_t total_bytes = 0;
  for (const Entry& e : entries) {
    if (e.kind != Kind::kFile) continue;
    files.push_back(e.source.c_str());
    total_bytes += e.size;
  }
  larder_stage_result_t staged{};
  if (larder_stage(files.data(), files.size(), &staged) != LARDER_OK) {
    fmt::print(stderr, "larder-stage: staging failed ({}); copying from the PFS\n",
               larder_last_error());
  }
  if (rank == 0) {
    const auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
    fmt::print(stderr,
               "larder-stage: {} entries listed in {:.1f} s, cache started in {:.1f} s, {} files "
               "({:.1f} MiB) staged in {:.1f} s\n",
               entries.size(), secs(walked - start), secs(started - walked), staged.files,
               static_cast<double>(staged.bytes) / (1 << 20), secs(Clock::now() - started));
  }

  // 3. Each node writes its copy; its ranks split the files.
  const int node = node_index(rank);
  MPI_Comm node_comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, node, rank, &node_comm);
  int local = 0;
  int local_size = 1;
  MPI_Comm_rank(node_comm, &local);
  MPI_Comm_size(node_comm, &local_size);
  int nodes = 0;
  int is_leader = local == 0 ? 1 : 0;
  MPI_Allreduce(&is_leader, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const std::string to = destination(to_pattern, node);
  std::vector<std::string> errors;
  if (local == 0) {
    std::error_code ec;
    fs::create_directories(to, ec);
    if (ec) errors.push_back(fmt::format("{}: {}", to, ec.message()));
    for (const Entry& e : entries) {
      if (e.kind == Kind::kDir && ::mkdir((to + "/" + e.target).c_str(), 0700) != 0 &&
          errno != EEXIST) {
        errors.push_back(fmt::format("{}/{}: {}", to, e.target, std::strerror(errno)));
      }
    }
  }
  MPI_Barrier(node_comm);
  std::vector<char> buf(kBlock);
  std::uint64_t copied = 0;
  std::uint64_t copied_files = 0;
  auto last_report = Clock::now();
  std::size_t file_index = 0;
  for (const Entry& e : entries) {
    if (e.kind != Kind::kFile) continue;
    if (file_index++ % static_cast<std::size_t>(local_size) != static_cast<std::size_t>(local))
      continue;
    std::string error = copy_file(e, to + "/" + e.target, buf, copied);
    if (error.empty()) {
      ++copied_files;
    } else {
      errors.push_back(std::move(error));
    }
    if (rank == 0 && Clock::now() - last_report > std::chrono::seconds(1)) {
      last_report = Clock::now();
      fmt::print(stderr,
                 "larder-stage: node 0, rank 0: {:.1f} MiB of its share copied ({} files)\n",
                 static_cast<double>(copied) / (1 << 20), copied_files);
    }
  }
  MPI_Barrier(node_comm);
  // Symlinks, then directory modes and times, last (a read-only directory is filled first).
  if (local == 0) {
    for (const Entry& e : entries) {
      if (e.kind != Kind::kLink) continue;
      const std::string at = to + "/" + e.target;
      ::unlink(at.c_str());
      if (::symlink(e.link.c_str(), at.c_str()) != 0)
        errors.push_back(fmt::format("{}: {}", at, std::strerror(errno)));
    }
    // Deepest first: setting a directory's time after its children were changed.
    for (std::size_t i = entries.size(); i-- > 0;) {
      const Entry& e = entries[i];
      if (e.kind != Kind::kDir) continue;
      const std::string at = to + "/" + e.target;
      const timespec times[2] = {{e.mtime_sec, e.mtime_nsec}, {e.mtime_sec, e.mtime_nsec}};
      if (::chmod(at.c_str(), e.mode) != 0 || ::utimensat(AT_FDCWD, at.c_str(), times, 0) != 0)
        errors.push_back(fmt::format("{}: {}", at, std::strerror(errno)));
    }
  }
  MPI_Comm_free(&node_comm);

  // 4. Report: every rank its errors, rank 0 the totals.
  for (const std::string& e : errors) fmt::print(stderr, "larder-stage: rank {}: {}\n", rank, e);
  if (rank == 0) {
    for (const std::string& e : walk.errors) fmt::print(stderr, "larder-stage: {}\n", e);
  }
  larder_stats_t stats{};
  larder_stats_get(&stats);
  std::uint64_t mine[3] = {copied, errors.size(), stats.pfs_bytes_read};
  std::uint64_t sum[3] = {0, 0, 0};
  MPI_Reduce(mine, sum, 3, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  const bool failed_walk = !walk.errors.empty();
  int bad = (!errors.empty() || failed_walk) ? 1 : 0;
  int any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    fmt::print(
        "larder-stage: {} entries ({} files, {:.1f} MiB) to {} on {} node(s) in {:.2f} s; "
        "{:.1f} MiB written in all, {:.1f} MiB read from the PFS; {} problem(s)\n",
        entries.size(), files.size(), static_cast<double>(total_bytes) / (1 << 20), to_pattern,
        nodes, secs, static_cast<double>(sum[0]) / (1 << 20),
        static_cast<double>(sum[2]) / (1 << 20), sum[1] + walk.errors.size());
  }
  if (larder_finalize() != LARDER_OK) {
    fmt::print(stderr, "larder-stage: larder_finalize: {}\n", larder_last_error());
    return 1;
  }
  return any_bad != 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) try {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 2;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  po::options_description visible(
      "mpiexec -n N larder-stage --to DIR PATH...: copies each PATH to DIR/<its name> on every\n"
      "node, reading each byte from the parallel file system once. Options");
  visible.add_options()("help,h", "show this help")(
      "to", po::value<std::string>(), "node-local destination directory; {node} = node index");
  po::options_description all;
  all.add(visible).add_options()("path", po::value<std::vector<std::string>>(), "sources");
  po::positional_options_description pos;
  pos.add("path", -1);
  po::variables_map vm;
  std::string usage_error;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (!vm.count("help") && (!vm.count("to") || !vm.count("path")))
      usage_error = "give --to DIR and at least one PATH";
  } catch (const po::error& e) {
    usage_error = e.what();
  }
  int status = 0;
  if (vm.count("help") || !usage_error.empty()) {
    if (rank == 0) {
      if (!usage_error.empty()) std::cerr << "larder-stage: " << usage_error << "\n";
      (usage_error.empty() ? std::cout : std::cerr) << visible;
    }
    status = usage_error.empty() ? 0 : 2;
  } else {
    status = run(vm["path"].as<std::vector<std::string>>(), vm["to"].as<std::string>(), rank);
  }
  MPI_Finalize();
  return status;
} catch (const std::exception& e) {
  // Out of memory, or a list rank 0 sent that does not parse: stop the whole job, not one rank.
  std::cerr << "larder-stage: " << e.what() << "\n";
  MPI_Abort(MPI_COMM_WORLD, 2);
  return 2;
}
