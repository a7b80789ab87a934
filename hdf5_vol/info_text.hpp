// InfoText: the connector's info string ("under_vol=0;under_info={}"), parsed and checked
// without touching HDF5, so that a bad HDF5_VOL_CONNECTOR gets one clear message.
//
//   info  := item (';' item)*          an empty string takes every default
//   item  := key '=' value
//   under_vol  = a connector value (0-65535) or a connector name      default 0 (native)
//   under_info = '{' the under connector's own info string '}'         default {}
//   start      = auto | world | local | never                          default auto
//   cache      = on | off                                              default on
//
// Braces nest, so under_info may itself hold a stack: under_info={under_vol=0;under_info={}}.
#ifndef LARDER_HDF5_VOL_INFO_TEXT_HPP_
#define LARDER_HDF5_VOL_INFO_TEXT_HPP_

#include <optional>
#include <string>
#include <string_view>

#include "hdf5_vol/larder_vol.h"

namespace larder::vol {

struct InfoText {
  std::string under_vol = "0";  // digits: a connector value; otherwise a connector name
  std::string under_info;       // the text between the braces
  larder_vol_start_t start = LARDER_VOL_START_AUTO;
  bool cache = true;

  bool operator==(const InfoText&) const = default;
};

// Exactly one of `info` and `error` is set.
struct ParsedInfo {
  std::optional<InfoText> info;
  std::string error;
};

ParsedInfo parse_info_text(std::string_view text);
// The canonical string; parse_info_text(format_info_text(x)) gives x back.
std::string format_info_text(const InfoText& info);
// The value named by `under_vol` when it is a number, else nullopt (then it is a name).
std::optional<int> connector_value(std::string_view under_vol);
std::string_view start_name(larder_vol_start_t start);

}  // namespace larder::vol

#endif  // LARDER_HDF5_VOL_INFO_TEXT_HPP_
