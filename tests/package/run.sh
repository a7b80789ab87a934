#!/usr/bin/env bash
# package_install: installs the build tree into a temporary prefix (cmake --install --prefix) and
# builds programs against the installed package, as another project would:
#   - find_package(Larder) with Larder::larder, a C and a C++ program (tests/package/consumer),
#     and the files of Larder::preload and Larder::hdf5_vol where the package says;
#   - pkg-config (larder.pc, relocated with the prefix): cc $(pkg-config --cflags --libs larder);
#   - `import larder` from the installed Python package, and an installed tool that runs.
# Each program reads a file through a cache private to the process and compares it with a
# direct read.
# usage: run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d /tmp/larder-package.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
run_logged() {  # run_logged NAME CMD...: CMD's output in $work/NAME.log, shown on failure
  local name=$1; shift
  "$@" >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "$name: $*"; }
}

prefix=$work/prefix
run_logged install cmake --install "$build" --prefix "$prefix"
ok "installed into a temporary prefix"
head -c 300000 /dev/urandom >"$work/data.bin"
export LARDER_SHM_DIR=$work/shm LARDER_DIR=$work/local LARDER_LOG=error
mkdir -p "$LARDER_SHM_DIR" "$LARDER_DIR"

# find_package(Larder)
run_logged configure cmake -S "$src/tests/package/consumer" -B "$work/cmake" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix"
run_logged build cmake --build "$work/cmake"
out=$("$work/cmake/consumer_c" "$work/data.bin") || fail "consumer_c failed"
[[ $out == "ok 300000 300000" ]] || fail "consumer_c: $out"
ok "find_package(Larder): a C program linked with Larder::larder read through the cache ($out)"
out=$("$work/cmake/consumer_cxx" "$work/data.bin") || fail "consumer_cxx failed"
[[ $out == "ok 300000" ]] || fail "consumer_cxx: $out"
ok "find_package(Larder): a C++ program (larder.hpp) read through the cache"
declare -A files
while IFS='=' read -r key value; do files[$key]=$value; done <"$work/cmake/larder_files.txt"
[[ ${files[preload]} == "$prefix"/* && -f ${files[preload]} ]] ||
  fail "Larder::preload is not an installed file: ${files[preload]}"
ok "Larder::preload is ${files[preload]#"$prefix"/}"
if [[ ${files[hdf5_plugin_dir]} != none ]]; then
  [[ -f ${files[hdf5_plugin_dir]}/liblarder_vol.so ]] ||
    fail "no liblarder_vol.so in the directory of Larder::hdf5_vol: ${files[hdf5_plugin_dir]}"
  [[ $(find "${files[hdf5_plugin_dir]}" -maxdepth 1 -name '*.so' | wc -l) -eq 1 ]] ||
    fail "the plugin directory holds more than the plugin"
  ok "Larder::hdf5_vol is in ${files[hdf5_plugin_dir]#"$prefix"/}, alone"
fi

# pkg-config
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name larder.pc)")
[[ -n $PKG_CONFIG_PATH ]] || fail "larder.pc is not installed"
# shellcheck disable=SC2046  # pkg-config prints a word list
cc -o "$work/consumer_pc" "$src/tests/package/consumer/consumer.c" \
  $(pkg-config --cflags --libs larder) >"$work/pc.log" 2>&1 || { cat "$work/pc.log"; fail "cc with pkg-config"; }
out=$("$work/consumer_pc" "$work/data.bin") || fail "consumer_pc failed"
[[ $out == "ok 300000 300000" ]] || fail "consumer_pc: $out"
ok "pkg-config: cc \$(pkg-config --cflags --libs larder) builds a program that reads through the cache"
# shellcheck disable=SC2046
c++ -std=c++20 -o "$work/consumer_pc_cxx" "$src/tests/package/consumer/consumer.cpp" \
  $(pkg-config --cflags --libs larder) >"$work/pcxx.log" 2>&1 || { cat "$work/pcxx.log"; fail "c++ with pkg-config"; }
out=$("$work/consumer_pc_cxx" "$work/data.bin") || fail "consumer_pc_cxx failed"
[[ $out == "ok 300000" ]] || fail "consumer_pc_cxx: $out"
ok "pkg-config: a C++ program (larder.hpp, C++20) builds and reads through the cache"
[[ $(pkg-config --variable=preload larder) -ef ${files[preload]} ]] ||
  fail "larder.pc's preload variable: $(pkg-config --variable=preload larder)"
[[ $(pkg-config --variable=pythondir larder) -ef ${files[python_dir]} ]] ||
  fail "larder.pc's pythondir and the CMake package's differ"
ok "larder.pc names the preload library and the Python package"

# The Python package and an installed tool, from the prefix alone.
out=$(cd "$work" && PYTHONPATH=${files[python_dir]} /usr/bin/python3 -c \
  'import larder; print(larder.role(), larder.library)') || fail "import larder from the prefix"
[[ $out == "off $prefix/"* ]] || fail "import larder: $out"
ok "import larder from the installed package loads ${out#off "$prefix"/}"
run_logged tool "$prefix/bin/larder-stat" --help
ok "installed tools find liblarder.so (larder-stat --help)"

# The environment module, loaded with Debian's Lmod (scripts/setup.sh installs it) in a shell
# that has nothing of Larder's: `module load larder` prints nothing and sets what the user guide
# has users set by hand; `module unload larder` takes it all back.
lmod_init=/usr/share/lmod/lmod/init/bash
[[ -f $lmod_init ]] || fail "Lmod is not installed ($lmod_init): run scripts/setup.sh"
modules=$prefix/share/modulefiles
[[ -n $(find "$modules/larder" -type f) ]] || fail "no modulefile under $modules/larder"
# shellcheck disable=SC2016  # expanded by the inner shell
env -i HOME="$HOME" PATH=/usr/bin:/bin bash --noprofile --norc -c '
  source "$1" >/dev/null 2>&1 || exit 2
  module use "$2"
  module load larder >"$3/module.out" 2>&1 || { cat "$3/module.out"; exit 3; }
  env | sort >"$3/module.env"
  module unload larder >>"$3/module.out" 2>&1 || exit 4
  env | grep -E "^(LARDER_|PYTHONPATH|HDF5_PLUGIN_PATH|CMAKE_PREFIX_PATH|PKG_CONFIG_PATH)=" \
    >"$3/module.after" || true
  echo "$PATH" >"$3/module.path"
' lmod "$lmod_init" "$modules" "$work" || fail "module load/unload larder (exit $?)"
[[ ! -s $work/module.out ]] || { cat "$work/module.out"; fail "module load larder printed something"; }
declare -A menv
while IFS='=' read -r key value; do menv[$key]=$value; done <"$work/module.env"
[[ ${menv[LARDER_PRELOAD_LIB]} -ef ${files[preload]} ]] ||
  fail "LARDER_PRELOAD_LIB is ${menv[LARDER_PRELOAD_LIB]:-unset}, the preload is ${files[preload]}"
[[ -f ${menv[LARDER_AUDIT_LIB]} && ${menv[LARDER_AUDIT_LIB]} == */liblarder_audit.so ]] ||
  fail "LARDER_AUDIT_LIB is ${menv[LARDER_AUDIT_LIB]:-unset}"
[[ ${menv[LARDER_HOME]} -ef $prefix ]] || fail "LARDER_HOME is ${menv[LARDER_HOME]:-unset}"
[[ ${menv[PYTHONPATH]%%:*} -ef ${files[python_dir]} ]] || fail "PYTHONPATH is ${menv[PYTHONPATH]:-unset}"
[[ -f ${menv[HDF5_PLUGIN_PATH]%%:*}/liblarder_vol.so || ${files[hdf5_plugin_dir]} == none ]] ||
  fail "HDF5_PLUGIN_PATH is ${menv[HDF5_PLUGIN_PATH]:-unset}"
[[ -f ${menv[CMAKE_PREFIX_PATH]%%:*}/lib/cmake/Larder/LarderConfig.cmake ]] ||
  fail "CMAKE_PREFIX_PATH is ${menv[CMAKE_PREFIX_PATH]:-unset}"
[[ $(PKG_CONFIG_PATH=${menv[PKG_CONFIG_PATH]} pkg-config --variable=preload larder) -ef ${files[preload]} ]] ||
  fail "pkg-config with the module's PKG_CONFIG_PATH does not find larder.pc"
[[ -x ${menv[PATH]%%:*}/larder-stat ]] || fail "PATH does not start with the tools: ${menv[PATH]}"
out=$(cd "$work" && env -i PATH="${menv[PATH]}" PYTHONPATH="${menv[PYTHONPATH]}" LARDER_LOG=error \
  python3 -c 'import larder; print(larder.library)' 2>&1) || fail "import larder after module load: $out"
[[ $out -ef $prefix/lib/liblarder.so || $out == "$prefix"/* ]] || fail "import larder loads $out"
ok "module load larder: silent; LARDER_PRELOAD_LIB, LARDER_AUDIT_LIB, PATH, PYTHONPATH, HDF5_PLUGIN_PATH, CMAKE_PREFIX_PATH and PKG_CONFIG_PATH point into the prefix"
[[ ! -s $work/module.after && $(cat "$work/module.path") != *"$prefix"* ]] ||
  fail "module unload larder left: $(cat "$work/module.after" "$work/module.path")"
ok "module unload larder takes every variable back"

[[ -z $(find "$LARDER_SHM_DIR" "$LARDER_DIR" -type f) ]] || fail "larder files left behind"
echo "package ok"
