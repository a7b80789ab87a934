/*
 * Larder's HDF5 VOL connector: a pass-through connector that serves reads of files opened
 * read-only through the Larder cache (docs/hdf5-vol.md).
 *
 * Normally loaded as a plugin, with no code change:
 *   HDF5_PLUGIN_PATH=<dir of liblarder_vol.so>
 *   HDF5_VOL_CONNECTOR="larder under_vol=0;under_info={}"
 * A program may also register it and put it on a file access property list itself:
 *   hid_t id = larder_vol_register();
 *   H5Pset_vol(fapl, id, &info);   // info may be NULL: native below, default options
 */
#ifndef LARDER_HDF5_VOL_LARDER_VOL_H_
#define LARDER_HDF5_VOL_LARDER_VOL_H_

#include <hdf5.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LARDER_VOL_NAME "larder"
/* In the range HDF5 leaves to connectors under test (256-511). */
#define LARDER_VOL_VALUE 311
#define LARDER_VOL_VERSION 1

/* What the connector does at a read-only open when Larder is not running yet. */
typedef enum larder_vol_start {
  LARDER_VOL_START_AUTO = 0,  /* MPI-IO open: start over the file's communicator; serial: local */
  LARDER_VOL_START_WORLD = 1, /* start over MPI_COMM_WORLD (every rank must open a file) */
  LARDER_VOL_START_LOCAL = 2, /* start a cache private to this process */
  LARDER_VOL_START_NEVER = 3  /* never start Larder; use it only when already running */
} larder_vol_start_t;

/* The connector's info ("under_vol=0;under_info={}" in HDF5_VOL_CONNECTOR). */
typedef struct larder_vol_info {
  hid_t under_vol_id;       /* the connector below (native unless told otherwise) */
  void* under_vol_info;     /* its info, or NULL */
  larder_vol_start_t start; /* start=auto|world|local|never */
  int cache;                /* cache=on (1) or off (0: plain pass-through) */
} larder_vol_info_t;

/* Registers the connector once and returns its ID (H5I_INVALID_HID on failure). */
hid_t larder_vol_register(void);

#ifdef __cplusplus
}
#endif

#endif /* LARDER_HDF5_VOL_LARDER_VOL_H_ */
