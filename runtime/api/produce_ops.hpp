// The calls on files under LARDER_PRODUCE (docs/user-guide.md, "Producing files"), shared by the
// preload wrappers and the C API, over a FileService (a rank's session, or a worker's agent
// client) and this process's ProduceTable. Like file_ops, each returns nullopt when the call is
// not Larder's to serve (the caller makes the real call), else the POSIX result (-1 with errno).
#ifndef LARDER_RUNTIME_API_PRODUCE_OPS_HPP_
#define LARDER_RUNTIME_API_PRODUCE_OPS_HPP_

#include <sys/stat.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "runtime/api/file_service.hpp"
#include "runtime/api/produce_table.hpp"

namespace larder::produce {

// Whether open flags write (or create, or truncate) the file.
bool writes(int flags) noexcept;

// An open of `abs` (under LARDER_PRODUCE, absolute, lexically clean) with `flags` that write:
// the path is claimed for this process (EROFS when it is published, EEXIST when another process
// produces it) and the descriptor returned is the staging file's, opened with the caller's flags.
// An open that only reads a file this process writes gets the staging file too.
std::optional<int> open(FileService& svc, ProduceTable& table, const std::string& abs, int flags,
                        mode_t mode);
// stat() of a file this process writes and has not published: its staging file's.
std::optional<int> stat_own(ProduceTable& table, const std::string& abs, struct stat* st);

// Publishes `file` (its last descriptor and mapping are gone) through `svc`; with no service, or
// when the service cannot, the file is written to the PFS instead (nothing is lost).
void publish(FileService* svc, ProduceTable& table, const std::shared_ptr<Produced>& file);
// close() of a produced descriptor: the real close, then the publication when it was the last.
int close(FileService* svc, ProduceTable& table, int fd);
// Publishes every file this process has not finished (it exits, or Larder stops).
void publish_unfinished(FileService* svc, ProduceTable& table);

// rename(from, to) with `to` under LARDER_PRODUCE: a file this process writes is renamed before
// it is published; a published one is published under the new name too (and renamed on the
// PFS in `through` mode); any other file is produced at `to` from its bytes, then removed.
std::optional<int> rename(FileService& svc, ProduceTable& table, const std::string& from,
                          const std::string& to);
// unlink() of a path under LARDER_PRODUCE: a file this process has not published is given up;
// a published file stays readable by the job (write once): in `local` mode unlink succeeds and
// changes nothing, in `through` mode it removes the PFS's copy.
std::optional<int> unlink(FileService& svc, ProduceTable& table, const std::string& abs);

}  // namespace larder::produce

#endif  // LARDER_RUNTIME_API_PRODUCE_OPS_HPP_
