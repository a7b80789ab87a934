// What the dynamic loader opens for a shared object under a prefix (docs/architecture.md,
// "Shared objects"). The loader's audit module (runtime/audit) asks its rank's agent, which
// answers from here: the object's node file (Cache::node_file: read from the PFS once per job,
// over the network once per node), so every process of the node maps one copy.
//
// Two names point at a node file. A search candidate (the loader tries a directory of
// LD_LIBRARY_PATH, RUNPATH, ...) may open any file: the loader keeps the candidate's name, so
// the answer is the node file itself. An exact name (dlopen of a path, a DT_NEEDED with a '/')
// becomes the object's name and the base of its $ORIGIN, so the answer is the object's path
// under the node's loader tree, `<root><original path>`, a hard link of the node file: $ORIGIN
// then stays inside the tree, and a name under the tree is mapped back by stripping the root.
#ifndef LARDER_RUNTIME_API_LOADER_OBJECTS_HPP_
#define LARDER_RUNTIME_API_LOADER_OBJECTS_HPP_

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/common/status.hpp"

namespace larder {

class FileService;

enum class ObjectKind : std::uint32_t {
  kOriginal = 0,  // open `path`: not ours (outside the prefixes, not a regular file)
  kNodeCopy = 1,  // open `path`, the node-local copy
  kAbsent = 2,    // the cache knows that the file does not exist (errno in `error`)
};

struct ObjectAnswer {
  ObjectKind kind = ObjectKind::kOriginal;
  int error = 0;
  std::string path;
};

// The candidate with the loader tree's root taken off and made lexically normal ("/a/b/../c"
// is "/a/c"); `candidate` unchanged when it is not absolute or not under `root`.
std::string object_original(std::string_view root, std::string_view candidate);

// Answers `candidate` (a name the loader is about to open; `exact`: an exact name, see above)
// from `svc`'s cache, with the loader tree at `root` (empty: no tree, when the node's files
// directory cannot hold executable mappings: every object is answered with its original).
// A file that is not an ELF object is answered with its original (the loader's own error text).
// Not OK when the cache cannot answer: the loader then opens the original.
Result<ObjectAnswer> find_object(FileService& svc, const std::string& root,
                                 std::string_view candidate, bool exact);

}  // namespace larder

#endif  // LARDER_RUNTIME_API_LOADER_OBJECTS_HPP_
