/* A library of its own (VALUE set at build time): found through LD_LIBRARY_PATH, or loaded by a
   worker process. */
int lib_value(void) {
  return VALUE;
}
