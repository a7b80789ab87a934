#include "apps/larder-bench/io/verify.hpp"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "apps/larder-bench/data/shared_listing.hpp"

namespace larder::bench {
namespace {

constexpr std::size_t kPiece = 1 << 20;

// Compares the whole file read through `io` with plain preads; returns the bytes compared.
Result<std::uint64_t> compare_file(IoBackend& io, IoBackend& direct, const std::string& path) {
  auto through = io.open(path);
  if (!through.ok()) return through.status();
  auto plain = direct.open(path);
  if (!plain.ok()) return plain.status();
  std::vector<std::uint8_t> a(kPiece);
  std::vector<std::uint8_t> b(kPiece);
  std::uint64_t off = 0;
  while (true) {
    auto na = through.value()->pread(a, off);
    if (!na.ok()) return na.status();
    auto nb = plain.value()->pread(b, off);
    if (!nb.ok()) return nb.status();
    if (na.value() != nb.value() || std::memcmp(a.data(), b.data(), na.value()) != 0) {
      return Status::error(
          fmt::format("{}: bytes differ from a direct read at offset {} ({} "
                      "bytes read through --io, {} directly)",
                      path, off, na.value(), nb.value()));
    }
    if (na.value() == 0) return off;
    off += na.value();
  }
}

}  // namespace

Status verify_dataset(const Workload& w, IoBackend& io, const MpiWorld& world, Console& console) {
  auto files = list_on_root(w.dataset, Split::kTrain, world);
  if (!files.ok()) return files.status();
  if (w.workflow.evaluation) {
    auto eval = list_on_root(w.dataset, Split::kEval, world);
    if (!eval.ok()) return eval.status();
    files->insert(files->end(), eval->begin(), eval->end());
  }
  const auto direct = make_posix_backend(false);
  Status local;
  std::uint64_t bytes = 0;
  const std::size_t n = files->size();
  for (int pass = 0; pass < 2 && local.ok(); ++pass) {
    for (std::size_t k = 0; k < n && local.ok(); ++k) {
      const std::string& path = files.value()[(k + static_cast<std::size_t>(world.rank())) % n];
      auto got = compare_file(io, *direct, path);
      if (got.ok()) bytes += got.value();
      local = got.status();
    }
  }
  if (!world.all_ok(local.ok())) {
    return local.ok() ? Status::error("verification failed on another rank") : local;
  }
  console.output(
      fmt::format("Verified: {} files read twice by each of {} ranks ({} bytes on "
                  "rank 0) match direct reads",
                  n, world.size(), bytes));
  return {};
}

}  // namespace larder::bench
