// file_cls: where reads are routed through the cache. file_open hands the under connector a
// property list with the cache driver for read-only opens (cache_route.hpp); everything else
// passes straight through. IS_ACCESSIBLE and DELETE probes arrive with a null object (HDF5 asks
// every plugin when an open fails, netCDF on every open): they use the property list instead.
#include "hdf5_vol/cache_route.hpp"
#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/forward.hpp"
#include "hdf5_vol/larder_vol.h"

namespace larder::vol {
namespace {

// Our info on a property list (a copy HDF5 made with info_copy), or the defaults.
class InfoCopy {
 public:
  InfoCopy() = default;
  InfoCopy(const InfoCopy&) = delete;
  InfoCopy& operator=(const InfoCopy&) = delete;
  ~InfoCopy() { info_free(copy_); }

  bool load(hid_t fapl_id) noexcept {
    void* info = nullptr;
    if (H5Pget_vol_info(fapl_id, &info) < 0) return false;
    copy_ = static_cast<larder_vol_info_t*>(info);
    return true;
  }
  larder_vol_info_t get() const noexcept { return copy_ != nullptr ? *copy_ : default_info(); }

 private:
  larder_vol_info_t* copy_ = nullptr;
};

// Closes a property list without disturbing the error stack.
class UnderFapl {
 public:
  explicit UnderFapl(hid_t id) noexcept : id_(id) {}
  UnderFapl(const UnderFapl&) = delete;
  UnderFapl& operator=(const UnderFapl&) = delete;
  ~UnderFapl() {
    if (id_ < 0) return;
    ErrorStackKeeper keep;
    H5Pclose(id_);
  }
  hid_t get() const noexcept { return id_; }

 private:
  hid_t id_;
};

// Create and open: the under connector's file, wrapped.
template <class Fn>
void* open_with(const char* name, unsigned flags, hid_t fapl_id, void** req, Access access,
                Fn&& open) noexcept {
  InfoCopy info;
  if (!info.load(fapl_id)) return nullptr;
  const larder_vol_info_t i = info.get();
  UnderFapl under(make_under_fapl(name, flags, fapl_id, i, access));
  if (under.get() < 0) return nullptr;
  void* file = open(under.get());
  if (file == nullptr) return nullptr;
  wrap_request(req, i.under_vol_id);
  return wrap_new(file, i.under_vol_id);
}

// IS_ACCESSIBLE and DELETE: no object, a property list in the arguments.
herr_t probe(H5VL_file_specific_args_t* args, hid_t* fapl_arg, hid_t dxpl_id, void** req) noexcept {
  InfoCopy info;
  if (!info.load(*fapl_arg)) return -1;
  const larder_vol_info_t i = info.get();
  UnderFapl under(make_under_fapl(nullptr, 0, *fapl_arg, i, Access::kProbe));
  if (under.get() < 0) return -1;
  H5VL_file_specific_args_t mine = *args;
  if (args->op_type == H5VL_FILE_IS_ACCESSIBLE)
    mine.args.is_accessible.fapl_id = under.get();
  else
    mine.args.del.fapl_id = under.get();
  const herr_t rc = H5VLfile_specific(nullptr, i.under_vol_id, &mine, dxpl_id, req);
  wrap_request(req, i.under_vol_id);
  return rc;
}

}  // namespace

void* file_create(const char* name, unsigned flags, hid_t fcpl_id, hid_t fapl_id, hid_t dxpl_id,
                  void** req) noexcept {
  return open_with(name, flags, fapl_id, req, Access::kCreate, [&](hid_t under_fapl) {
    return H5VLfile_create(name, flags, fcpl_id, under_fapl, dxpl_id, req);
  });
}

void* file_open(const char* name, unsigned flags, hid_t fapl_id, hid_t dxpl_id,
                void** req) noexcept {
  return open_with(name, flags, fapl_id, req, Access::kOpen, [&](hid_t under_fapl) {
    return H5VLfile_open(name, flags, under_fapl, dxpl_id, req);
  });
}

herr_t file_get(void* file, H5VL_file_get_args_t* args, hid_t dxpl_id, void** req) noexcept {
  return forward("file get", file, req, [&](void* under, hid_t id) {
    return H5VLfile_get(under, id, args, dxpl_id, req);
  });
}

herr_t file_specific(void* file, H5VL_file_specific_args_t* args, hid_t dxpl_id,
                     void** req) noexcept {
  if (args == nullptr) {
    push_error(Minor::kBadObject, "file specific: null arguments");
    return -1;
  }
  if (args->op_type == H5VL_FILE_IS_ACCESSIBLE)
    return probe(args, &args->args.is_accessible.fapl_id, dxpl_id, req);
  if (args->op_type == H5VL_FILE_DELETE) return probe(args, &args->args.del.fapl_id, dxpl_id, req);
  return forward("file specific", file, req, [&](void* under, hid_t id) -> herr_t {
    const herr_t rc = H5VLfile_specific(under, id, args, dxpl_id, req);
    if (rc >= 0 && args->op_type == H5VL_FILE_REOPEN && *args->args.reopen.file != nullptr) {
      void* reopened = wrap_new(*args->args.reopen.file, id);
      if (reopened == nullptr) return -1;
      *args->args.reopen.file = reopened;
    }
    return rc;
  });
}

herr_t file_optional(void* file, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept {
  return forward("file optional", file, req, [&](void* under, hid_t id) {
    return H5VLfile_optional(under, id, args, dxpl_id, req);
  });
}

herr_t file_close(void* file, hid_t dxpl_id, void** req) noexcept {
  return forward(
      "file close", file, req,
      [&](void* under, hid_t id) { return H5VLfile_close(under, id, dxpl_id, req); },
      OnSuccess::kFreeWrapper);
}

}  // namespace larder::vol
