// from_ucs: the one place a ucs_status_t becomes a Status (the UCX code kept as native code).
#ifndef LARDER_UCX_TRANSPORT_UCX_STATUS_HPP_
#define LARDER_UCX_TRANSPORT_UCX_STATUS_HPP_

#include <ucs/type/status.h>

#include <string_view>

#include "runtime/common/status.hpp"

namespace larder::ucx {

Status from_ucs(ucs_status_t status, std::string_view what);

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_UCX_STATUS_HPP_
