#include "runtime/tier/segments.hpp"

#include <cerrno>

#include "runtime/common/sys.hpp"

namespace larder {

std::string Segments::path(const std::string& dir, int rank, std::uint32_t id) {
  return dir + "/seg-" + std::to_string(rank) + "-" + std::to_string(id);
}

Result<Segments::Made> Segments::create(std::uint64_t size) {
  const std::uint32_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  std::string name = path(dir_, rank_, id);
  auto file = Arena::create_file(name, size);
  if (!file.ok()) return file.status();
  Made made{id, file->get(), std::move(name)};
  std::lock_guard lock(mu_);
  files_.emplace(id, std::move(*file));
  return made;
}

Result<Segments::Made> Segments::adopt(const std::string& file) {
  const std::uint32_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  std::string name = path(dir_, rank_, id);
  if (sys::rename(file.c_str(), name.c_str()) != 0) {
    return from_errno(errno, "cannot take " + file + " as a segment");
  }
  auto mapped = Arena::adopt_file(name);
  if (!mapped.ok()) {
    (void)sys::rename(name.c_str(), file.c_str());  // give it back as it was
    return mapped.status();
  }
  Made made{id, mapped->get(), std::move(name)};
  std::lock_guard lock(mu_);
  files_.emplace(id, std::move(*mapped));
  return made;
}

Result<Segments::Made> Segments::link_kept(const std::string& kept, bool disk,
                                           std::uint32_t number) {
  if (disk && disk_dir_.empty()) return Status(Errc::kUnavailable, 0, "no disk files directory");
  if (number > kKeptNumberMask) return Status(Errc::kNoSpace, 0, "too many kept files");
  const std::uint32_t id = kKeptSegment | number | (disk ? kDiskSegment : 0u);
  std::string name = path(disk ? disk_dir_ : dir_, rank_, id);
  if (sys::link(kept.c_str(), name.c_str()) != 0) {
    return from_errno(errno, "cannot link kept file " + kept);
  }
  auto mapped = Arena::adopt_file(name, /*read_view=*/true);
  if (!mapped.ok()) {
    sys::unlink(name.c_str());
    return mapped.status();
  }
  Made made{id, mapped->get(), std::move(name)};
  std::lock_guard lock(mu_);
  files_.emplace(id, std::move(*mapped));
  kept_.emplace(id, true);
  return made;
}

bool Segments::kept(std::uint32_t id) const {
  std::lock_guard lock(mu_);
  return kept_.contains(id);
}

const Arena* Segments::find(std::uint32_t id) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(id);
  return it == files_.end() ? nullptr : it->second.get();
}

void Segments::drop(std::uint32_t id) noexcept {
  std::unique_ptr<Arena> gone;
  {
    std::lock_guard lock(mu_);
    auto it = files_.find(id);
    if (it == files_.end()) return;
    gone = std::move(it->second);
    files_.erase(it);
  }
  sys::unlink(gone->path().c_str());
}

}  // namespace larder
