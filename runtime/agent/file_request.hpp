// The agent protocol's FileRequest made from a CachedFile, and back (the client and the server;
// kept out of protocol.hpp, which the loader's audit module includes without the cache).
#ifndef LARDER_RUNTIME_AGENT_FILE_REQUEST_HPP_
#define LARDER_RUNTIME_AGENT_FILE_REQUEST_HPP_

#include <string>
#include <utility>

#include "runtime/agent/protocol.hpp"
#include "runtime/cache/cache.hpp"

namespace larder::agent {

inline FileRequest request_of(const CachedFile& file) {
  FileRequest req;
  req.file = file.id;
  req.size = file.size;
  req.version = file.version;
  req.local_only = file.local_only ? 1 : 0;
  return req;
}

inline CachedFile file_of(const FileRequest& req, std::string path) {
  return CachedFile{std::move(path), req.file, req.size, req.version, req.local_only != 0};
}

}  // namespace larder::agent

#endif  // LARDER_RUNTIME_AGENT_FILE_REQUEST_HPP_
