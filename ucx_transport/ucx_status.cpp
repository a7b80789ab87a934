#include "ucx_transport/ucx_status.hpp"

#include <string>

namespace larder::ucx {

Status from_ucs(ucs_status_t status, std::string_view what) {
  if (status == UCS_OK) return {};
  const Errc code = status == UCS_ERR_NO_MEMORY ? Errc::kNoSpace : Errc::kTransport;
  return {code, static_cast<int>(status), std::string(what) + ": " + ucs_status_string(status)};
}

}  // namespace larder::ucx
