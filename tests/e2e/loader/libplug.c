/* dlopen'ed by absolute path (an exact name); needs libb.so through RUNPATH $ORIGIN/../lib. */
int b_value(void);
int plug_value(void) {
  return b_value() * 2;
}
