#include "runtime/api/produce_table.hpp"

#include <unistd.h>

namespace larder {

ProduceTable::ProduceTable() : flags_(new std::atomic<std::uint8_t>[kMaxTracked]) {
  for (int i = 0; i < kMaxTracked; ++i) flags_[i].store(0, std::memory_order_relaxed);
}

bool ProduceTable::due(const Produced& f) const noexcept {
  return f.fds == 0 && f.maps == 0 && !f.done && f.owner == ::getpid();
}

bool ProduceTable::add(int fd, std::shared_ptr<Produced> file) {
  if (fd < 0 || fd >= kMaxTracked) return false;
  std::lock_guard lock(mu_);
  ++file->fds;
  if (!file->done) by_path_[file->path] = file;
  auto [it, inserted] = fds_.insert_or_assign(fd, std::move(file));
  (void)it;
  (void)inserted;
  flags_[fd].store(1, std::memory_order_relaxed);
  return true;
}

std::shared_ptr<Produced> ProduceTable::find(int fd) const {
  if (!maybe_produced(fd)) return nullptr;
  std::lock_guard lock(mu_);
  auto it = fds_.find(fd);
  return it == fds_.end() ? nullptr : it->second;
}

std::shared_ptr<Produced> ProduceTable::release(int fd) {
  if (!maybe_produced(fd)) return nullptr;
  std::lock_guard lock(mu_);
  auto it = fds_.find(fd);
  if (it == fds_.end()) return nullptr;
  std::shared_ptr<Produced> file = std::move(it->second);
  fds_.erase(it);
  flags_[fd].store(0, std::memory_order_relaxed);
  --file->fds;
  return due(*file) ? file : nullptr;
}

void ProduceTable::add_map(void* addr, std::size_t len, std::shared_ptr<Produced> file) {
  std::lock_guard lock(mu_);
  ++file->maps;
  maps_[reinterpret_cast<std::uintptr_t>(addr)] = {len, std::move(file)};
  maps_count_.store(maps_.size(), std::memory_order_relaxed);
}

std::vector<std::shared_ptr<Produced>> ProduceTable::release_maps(void* addr, std::size_t len) {
  std::vector<std::shared_ptr<Produced>> due_now;
  const auto start = reinterpret_cast<std::uintptr_t>(addr);
  std::lock_guard lock(mu_);
  for (auto it = maps_.lower_bound(start); it != maps_.end() && it->first < start + len;) {
    std::shared_ptr<Produced> file = std::move(it->second.second);
    it = maps_.erase(it);
    --file->maps;
    if (due(*file)) due_now.push_back(std::move(file));
  }
  maps_count_.store(maps_.size(), std::memory_order_relaxed);
  return due_now;
}

std::shared_ptr<Produced> ProduceTable::writing(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = by_path_.find(path);
  if (it == by_path_.end() || it->second->done) return nullptr;
  return it->second;
}

void ProduceTable::rename(const std::shared_ptr<Produced>& file, std::string path,
                          std::string canonical) {
  std::lock_guard lock(mu_);
  if (auto it = by_path_.find(file->path); it != by_path_.end() && it->second == file) {
    by_path_.erase(it);
  }
  file->path = std::move(path);
  file->canonical = std::move(canonical);
  by_path_[file->path] = file;
}

bool ProduceTable::finish(const std::shared_ptr<Produced>& file) {
  std::lock_guard lock(mu_);
  if (file->done) return false;
  file->done = true;
  if (auto it = by_path_.find(file->path); it != by_path_.end() && it->second == file) {
    by_path_.erase(it);
  }
  return true;
}

void ProduceTable::remember_published(const std::string& path) {
  std::lock_guard lock(mu_);
  published_.insert(path);
}

bool ProduceTable::published_here(const std::string& path) const {
  std::lock_guard lock(mu_);
  return published_.contains(path);
}

std::vector<std::shared_ptr<Produced>> ProduceTable::take_unfinished(pid_t self) {
  std::vector<std::shared_ptr<Produced>> out;
  std::lock_guard lock(mu_);
  for (auto it = by_path_.begin(); it != by_path_.end();) {
    if (!it->second->done && it->second->owner == self) {
      it->second->done = true;
      out.push_back(it->second);
      it = by_path_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace larder
