// info_cls: the connector's info (larder_vol_info_t), to and from its string form.
//
// A NULL info is legal everywhere (H5Pset_vol(fapl, larder, NULL)): it means native below and
// every option at its default. A bad string is refused with one clear message, on the HDF5
// error stack and on stderr, because HDF5 fails its own initialisation on it and tools then
// often exit without printing the stack.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include <H5VLpassthru.h>

#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/errors.hpp"
#include "hdf5_vol/info_text.hpp"
#include "hdf5_vol/larder_vol.h"

namespace larder::vol {
namespace {

void refuse(const std::string& message) {
  push_error(Minor::kBadInfo, message);
  log_line(LogLevel::kError, message);
}

// A new reference on the connector named by `under_vol` (a value or a name), loading it from
// HDF5_PLUGIN_PATH when needed; negative when there is no such connector. HDF5's own
// pass-through connector is built in but registered only on request, as HDF5_VOL_CONNECTOR does.
hid_t register_under(const std::string& under_vol) {
  const auto value = connector_value(under_vol);
  if (value == H5VL_PASSTHRU_VALUE || under_vol == H5VL_PASSTHRU_NAME) {
    const hid_t id = H5VL_PASSTHRU;
    return id >= 0 && H5Iinc_ref(id) >= 0 ? id : H5I_INVALID_HID;
  }
  if (value)
    return H5VLregister_connector_by_value(static_cast<H5VL_class_value_t>(*value), H5P_DEFAULT);
  return H5VLregister_connector_by_name(under_vol.c_str(), H5P_DEFAULT);
}

}  // namespace

void* info_copy(const void* info) noexcept {
  const auto* src = static_cast<const larder_vol_info_t*>(info);
  if (src == nullptr || H5Iis_valid(src->under_vol_id) <= 0) {
    push_error(Minor::kBadInfo, "info copy: no info or no valid under connector");
    return nullptr;
  }
  auto* out =
      new (std::nothrow) larder_vol_info_t{src->under_vol_id, nullptr, src->start, src->cache};
  if (out == nullptr) return nullptr;
  if (H5Iinc_ref(out->under_vol_id) < 0) {
    delete out;
    return nullptr;
  }
  if (src->under_vol_info != nullptr &&
      H5VLcopy_connector_info(out->under_vol_id, &out->under_vol_info, src->under_vol_info) < 0) {
    {
      ErrorStackKeeper keep;
      H5Idec_ref(out->under_vol_id);
    }
    delete out;
    return nullptr;
  }
  return out;
}

herr_t info_cmp(int* cmp_value, const void* info1, const void* info2) noexcept {
  if (cmp_value == nullptr) return -1;
  const auto* a = static_cast<const larder_vol_info_t*>(info1);
  const auto* b = static_cast<const larder_vol_info_t*>(info2);
  *cmp_value = 0;
  if (a == nullptr || b == nullptr) {
    *cmp_value = (a != nullptr) - (b != nullptr);
    return 0;
  }
  if (H5VLcmp_connector_cls(cmp_value, a->under_vol_id, b->under_vol_id) < 0) return -1;
  if (*cmp_value != 0) return 0;
  if (H5VLcmp_connector_info(cmp_value, a->under_vol_id, a->under_vol_info, b->under_vol_info) < 0)
    return -1;
  if (*cmp_value != 0) return 0;
  if (a->start != b->start)
    *cmp_value = a->start < b->start ? -1 : 1;
  else if (a->cache != b->cache)
    *cmp_value = a->cache < b->cache ? -1 : 1;
  return 0;
}

herr_t info_free(void* info) noexcept {
  auto* i = static_cast<larder_vol_info_t*>(info);
  if (i == nullptr) return 0;
  {
    ErrorStackKeeper keep;
    if (i->under_vol_info != nullptr) H5VLfree_connector_info(i->under_vol_id, i->under_vol_info);
    H5Idec_ref(i->under_vol_id);
  }
  delete i;
  return 0;
}

herr_t info_to_str(const void* info, char** str) noexcept {
  if (str == nullptr) return -1;
  try {
    const auto* i = static_cast<const larder_vol_info_t*>(info);
    InfoText text;
    if (i != nullptr) {
      H5VL_class_value_t value = 0;
      if (H5VLget_value(i->under_vol_id, &value) < 0) return -1;
      text.under_vol = std::to_string(value);
      char* under = nullptr;
      if (H5VLconnector_info_to_str(i->under_vol_info, i->under_vol_id, &under) < 0) return -1;
      if (under != nullptr) {
        text.under_info = under;
        H5free_memory(under);
      }
      text.start = i->start;
      text.cache = i->cache != 0;
    }
    const std::string s = format_info_text(text);
    auto* out = static_cast<char*>(H5allocate_memory(s.size() + 1, false));
    if (out == nullptr) return -1;
    std::memcpy(out, s.c_str(), s.size() + 1);
    *str = out;
    return 0;
  } catch (...) {
    push_error(Minor::kInternal, "info to string: out of memory");
    return -1;
  }
}

herr_t str_to_info(const char* str, void** info) noexcept {
  if (info == nullptr) return -1;
  try {
    const ParsedInfo parsed = parse_info_text(str != nullptr ? str : "");
    if (!parsed.info) {
      refuse(parsed.error);
      return -1;
    }
    const InfoText& text = *parsed.info;
    const hid_t under_id = register_under(text.under_vol);
    if (under_id < 0) {
      const char* path = std::getenv("HDF5_PLUGIN_PATH");
      refuse("bad larder connector info: under_vol=" + text.under_vol +
             " names no VOL connector built into HDF5 or found in HDF5_PLUGIN_PATH='" +
             (path ? path : "") + "'");
      return -1;
    }
    void* under_info = nullptr;
    if (!text.under_info.empty() &&
        H5VLconnector_str_to_info(text.under_info.c_str(), under_id, &under_info) < 0) {
      refuse("bad larder connector info: the under connector (under_vol=" + text.under_vol +
             ") refused under_info={" + text.under_info + "}");
      ErrorStackKeeper keep;
      H5Idec_ref(under_id);
      return -1;
    }
    *info = new larder_vol_info_t{under_id, under_info, text.start, text.cache ? 1 : 0};
    return 0;
  } catch (...) {
    push_error(Minor::kInternal, "string to info: out of memory");
    return -1;
  }
}

}  // namespace larder::vol
