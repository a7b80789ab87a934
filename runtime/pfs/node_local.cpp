#include "runtime/pfs/node_local.hpp"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <cstdint>

namespace larder {
namespace {

struct Kind {
  std::uint64_t magic;
  const char* name;
};

// Block and memory file systems of the node (linux/magic.h). Squashfs is left out on purpose: a
// container image on the PFS, loop-mounted, reads its blocks from the PFS.
constexpr Kind kNodeLocal[] = {
    {EXT4_SUPER_MAGIC, "ext4"},  // also ext2 and ext3 (one magic)
    {XFS_SUPER_MAGIC, "xfs"},   {BTRFS_SUPER_MAGIC, "btrfs"}, {F2FS_SUPER_MAGIC, "f2fs"},
    {TMPFS_MAGIC, "tmpfs"},     {RAMFS_MAGIC, "ramfs"},       {OVERLAYFS_SUPER_MAGIC, "overlay"},
};

}  // namespace

std::optional<std::string> node_local_file_system(const std::string& dir) {
  struct statfs st {};
  if (::statfs(dir.c_str(), &st) != 0) return std::nullopt;
  const auto magic = static_cast<std::uint64_t>(static_cast<std::uint32_t>(st.f_type));
  for (const Kind& k : kNodeLocal) {
    if (k.magic == magic) return k.name;
  }
  return std::nullopt;
}

}  // namespace larder
