// TempDir: a scratch directory removed with everything in it when the test ends.
#ifndef LARDER_TESTS_SUPPORT_TEMP_DIR_HPP_
#define LARDER_TESTS_SUPPORT_TEMP_DIR_HPP_

#include <string>

namespace larder::testing {

class TempDir {
 public:
  // Under $TMPDIR (or /tmp), named after `tag`.
  explicit TempDir(const std::string& tag = "larder-test");
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::string& path() const noexcept { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace larder::testing

#endif  // LARDER_TESTS_SUPPORT_TEMP_DIR_HPP_
