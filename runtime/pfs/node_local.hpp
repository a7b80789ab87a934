// Whether a directory lies on a node-local file system (a disk or memory of this node: ext4,
// xfs, btrfs, f2fs, tmpfs, ramfs, overlay), as opposed to a shared one (Lustre, GPFS, NFS,
// BeeGFS, a FUSE client, anything else). A node-local prefix is not what Larder is for: its
// files are not the same files on another node (node 1's /tmp/data is not node 0's), and the
// kernel's page cache already serves a second read as fast as Larder's shared memory, so a cold
// read through the cache could only cost more (docs/user-guide.md, "Node-local prefixes").
#ifndef LARDER_RUNTIME_PFS_NODE_LOCAL_HPP_
#define LARDER_RUNTIME_PFS_NODE_LOCAL_HPP_

#include <optional>
#include <string>

namespace larder {

// The name of the node-local file system `dir` lies on (e.g. "ext4"); nullopt when it lies on
// another kind, or when statfs fails (a missing directory is not assumed local).
std::optional<std::string> node_local_file_system(const std::string& dir);

}  // namespace larder

#endif  // LARDER_RUNTIME_PFS_NODE_LOCAL_HPP_
