// Paths: lexical normalisation, prefix tests and canonical (symlink-free) names.
//
// Management is decided twice (see docs/architecture.md, "Which paths are managed"): the path as
// written, made absolute and lexically clean, must lie under a prefix (so a symlink from outside
// cannot bring a file in), and its canonical name must too (so `..` and symlinks cannot lead out).
#ifndef LARDER_RUNTIME_PATH_PATH_HPP_
#define LARDER_RUNTIME_PATH_PATH_HPP_

#include <string>
#include <string_view>

namespace larder::path {

// Collapses "//", "." and ".." without touching the file system. Input must be absolute;
// ".." at the root stays at the root; no trailing slash except for "/".
std::string lexically_normal(std::string_view absolute);

// Makes `p` absolute against the current directory (read with getcwd), then lexically clean.
// Returns an empty string when the current directory cannot be read.
std::string absolute(std::string_view p);

// Like absolute(), relative to an open directory's path instead of the current directory.
std::string absolute_from(std::string_view base_dir, std::string_view p);

// True when `p` is `prefix` or lies below it. Both must be lexically clean.
bool is_within(std::string_view p, std::string_view prefix) noexcept;

// realpath(3) of `p`; an empty string when it cannot be resolved.
std::string real_path_or_empty(const std::string& p);

}  // namespace larder::path

#endif  // LARDER_RUNTIME_PATH_PATH_HPP_
