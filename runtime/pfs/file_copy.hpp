// Whole-file copies onto the PFS that readers never see half-written: the bytes go to a temporary
// name beside the target (".<name>.larder-<pid>-<n>"), then a rename puts them in place. Used
// for produced files (`through` mode, and the fallback when a file cannot be published).
// Raw system calls only (runtime/common/sys.hpp): the preload never sees them.
#ifndef LARDER_RUNTIME_PFS_FILE_COPY_HPP_
#define LARDER_RUNTIME_PFS_FILE_COPY_HPP_

#include <cstdint>
#include <string>

#include "runtime/common/status.hpp"
#include "runtime/pfs/file_meta.hpp"

namespace larder {

// Copies `from` to `to` (created with permission bits `mode`; replaced when it exists).
// *meta (when not null) is the stat of `to` afterwards. Errors carry the errno.
Status copy_file_atomically(const std::string& from, const std::string& to, std::uint32_t mode,
                            FileMeta* meta);

// The directory part and the last component of an absolute path.
std::string parent_of(const std::string& path);
std::string name_of(const std::string& path);

}  // namespace larder

#endif  // LARDER_RUNTIME_PFS_FILE_COPY_HPP_
