/* The leaf library: found by its users through RUNPATH $ORIGIN/../lib. */
int b_value(void) {
  return 42;
}
