/* An HDF5 program as users write them: plain MPI_Init (or, with --thread-multiple,
 * MPI_Init_thread asking for MPI_THREAD_MULTIPLE), H5Fopen with the default property list,
 * every dataset named on the command line read whole as bytes. Knows nothing of Larder.
 *
 *   plain_mpi_reader [--thread-multiple] OUT FILE:DATASET...
 * Each rank writes "FILE:DATASET <bytes> <fnv>" lines to OUT.<rank>. Exit status 1 on any
 * failed call. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/fnv.h"

static int read_one(const char* spec, FILE* out) {
  char file[4096];
  const char* colon = strrchr(spec, ':');
  if (colon == NULL || (size_t)(colon - spec) >= sizeof file) {
    fprintf(stderr, "bad FILE:DATASET '%s'\n", spec);
    return 1;
  }
  memcpy(file, spec, (size_t)(colon - spec));
  file[colon - spec] = '\0';
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return 1;
  int rc = 1;
  hid_t d = H5Dopen2(f, colon + 1, H5P_DEFAULT);
  hid_t type = d < 0 ? H5I_INVALID_HID : H5Dget_type(d);
  hid_t space = d < 0 ? H5I_INVALID_HID : H5Dget_space(d);
  if (d >= 0 && type >= 0 && space >= 0) {
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    const size_t size = H5Tget_size(type);
    unsigned char* buf = n >= 0 && size > 0 ? malloc((size_t)n * size + 1) : NULL;
    if (buf != NULL && H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
      const size_t bytes = (size_t)n * size;
      rc = fprintf(out, "%s %zu %016llx\n", spec, bytes, (unsigned long long)fnv(buf, bytes)) < 0;
    }
    free(buf);
  }
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  if (d >= 0) H5Dclose(d);
  if (H5Fclose(f) < 0) rc = 1;
  return rc;
}

int main(int argc, char** argv) {
  int first = 1;
  int thread_multiple = argc > 1 && strcmp(argv[1], "--thread-multiple") == 0;
  if (thread_multiple) first = 2;
  if (argc < first + 2) {
    fprintf(stderr, "usage: plain_mpi_reader [--thread-multiple] OUT FILE:DATASET...\n");
    return 2;
  }
  if (thread_multiple) {
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 1;
  } else if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    return 1;
  }
  int rank = 0;
  if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS) return 1;
  char path[4200];
  snprintf(path, sizeof path, "%s.%d", argv[first], rank);
  FILE* out = fopen(path, "w");
  int rc = out == NULL;
  for (int i = first + 1; i < argc && rc == 0; ++i) rc = read_one(argv[i], out);
  if (out != NULL && fclose(out) != 0) rc = 1;
  int any = 0;
  if (MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) any = 1;
  if (MPI_Finalize() != MPI_SUCCESS) any = 1;
  return any;
}
