#!/usr/bin/env bash
# Installs what Larder needs on Debian bookworm and builds HDF5 1.14.5 and h5py once per MPI.
#
# Idempotent and quiet when there is nothing to do. Safe to run on every build.
#   - apt packages: installed only when missing (one `apt-get update` first, only then).
#   - HDF5 1.14.5 (parallel, shared): built from Debian trixie's source package into
#     $LARDER_DEPS/hdf5-1.14.5-<mpi> (default ~/.cache/larder-deps), outside the clone,
#     and rebuilt only when missing or of another version.
#   - h5py 3.10.0 on that HDF5 (Debian's h5py is built on HDF5 1.10, which has no VOL layer),
#     into $LARDER_DEPS/h5py-3.10.0-<mpi> (use it with PYTHONPATH=<that directory>), from
#     $LARDER_VENDOR/h5py-3.10.0.tar.gz (default: ../shared/vendor next to the clone, checked
#     against its .sha256), else from PyPI when it is reachable; without either it says so and
#     goes on (the h5py tests then report "skipped").
# Usage: scripts/setup.sh [--mpi mpich|openmpi|all] [--h5py mpich|openmpi|all|none]
#   (default: all and all; --h5py builds h5py only for that MPI of those set up)
# The MPIs' builds run side by side, each logging to its own files.
set -euo pipefail

readonly HDF5_VERSION=1.14.5
readonly HDF5_DEB_VERSION=1.14.5+repack-3
readonly H5PY_VERSION=3.10.0
DEPS_DIR=${LARDER_DEPS:-${HOME}/.cache/larder-deps}
REPO_DIR=$(cd "$(dirname "$0")/.." && pwd)
VENDOR_DIR=${LARDER_VENDOR:-${REPO_DIR}/../shared/vendor}
PYTHON=/usr/bin/python3  # Debian's, with numpy (h5py is built for it)
MPIS=(mpich openmpi)
H5PY_MPIS=()
h5py_choice=all

while [[ $# -gt 0 ]]; do
  case $1 in
    --h5py)
      case ${2:-} in
        mpich | openmpi | all | none) h5py_choice=$2 ;;
        *) echo "setup: --h5py accepts mpich, openmpi, all or none (got '${2:-}')" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --mpi)
      case ${2:-} in
        mpich | openmpi) MPIS=("$2") ;;
        all) MPIS=(mpich openmpi) ;;
        *) echo "setup: --mpi accepts mpich, openmpi or all (got '${2:-}')" >&2; exit 2 ;;
      esac
      shift 2 ;;
    *) echo "setup: unknown argument '$1' (accepted: --mpi mpich|openmpi|all," \
         "--h5py mpich|openmpi|all|none)" >&2; exit 2 ;;
  esac
done
# h5py for the MPIs set up, or only for the one asked for.
for mpi in "${MPIS[@]}"; do
  [[ $h5py_choice == all || $h5py_choice == "$mpi" ]] && H5PY_MPIS+=("$mpi")
done

log() { echo "setup: $*" >&2; }

# Everything the build, the tests, the demo and the tools use.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git dpkg-dev file
  clang-format clang-tidy
  mpich libmpich-dev openmpi-bin libopenmpi-dev
  libucx-dev ucx-utils
  libboost-program-options-dev libgtest-dev libgmock-dev
  libyaml-cpp-dev libxxhash-dev libfmt-dev nlohmann-json3-dev zlib1g-dev libaec-dev
  python3 python3-dev python3-numpy python3-mpi4py python3-torch python3-torchvision python3-yaml python3-lmdb
  cython3 python3-pkgconfig python3-setuptools python3-pip
  slurm-wlm slurmctld slurmd slurm-client munge
  python3-matplotlib python3-jinja2 chromium python3-websocket
  gnuplot-nox sshfs openssh-server openssh-client fuse3 iproute2 procps psmisc
  numactl bubblewrap lmod squashfs-tools squashfuse
)

missing_packages() {
  local pkg
  for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null | grep -qx installed; then
      echo "$pkg"
    fi
  done
}

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi

APT_UPDATED=0
apt_update_once() {
  if [[ $APT_UPDATED -eq 0 ]]; then
    $SUDO apt-get update -q >/dev/null 2>&1 || { log "apt-get update failed"; exit 1; }
    APT_UPDATED=1
  fi
}

install_packages() {
  local missing
  mapfile -t missing < <(missing_packages)
  [[ ${#missing[@]} -eq 0 ]] && return 0
  log "installing ${#missing[@]} missing packages: ${missing[*]}"
  apt_update_once
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    "${missing[@]}" >/dev/null 2>&1 || { log "apt-get install failed"; exit 1; }
}

# Debian trixie's source package of HDF5 1.14.5 (bookworm has only 1.10, which lacks the VOL layer).
fetch_hdf5_source() {
  local src_dir=$DEPS_DIR/src
  local tarball=$src_dir/hdf5_${HDF5_VERSION}+repack.orig.tar.gz
  if [[ -f $tarball ]]; then echo "$tarball"; return 0; fi
  mkdir -p "$src_dir"
  local list=/etc/apt/sources.list.d/larder-trixie-src.sources
  if ! grep -rqs 'trixie' /etc/apt/sources.list.d/ /etc/apt/sources.list 2>/dev/null \
      || ! apt-cache showsrc "hdf5=${HDF5_DEB_VERSION}" >/dev/null 2>&1; then
    log "adding a deb-src entry for Debian trixie (HDF5 ${HDF5_VERSION} source)"
    $SUDO tee "$list" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    APT_UPDATED=0
    apt_update_once
  fi
  log "downloading the hdf5 ${HDF5_DEB_VERSION} source package"
  (cd "$src_dir" && apt-get source -q --download-only "hdf5=${HDF5_DEB_VERSION}" >/dev/null 2>&1) || {
    log "could not download hdf5=${HDF5_DEB_VERSION} from the trixie deb-src archive"; exit 1; }
  echo "$tarball"
}

# The parts of HDF5's source tree that are built and installed, in order.
HDF5_PARTS=(src hl/src bin tools/lib tools/src/h5dump tools/src/h5ls)

# Whether the given MPI's HDF5 is built (its stamp and h5dump are there).
hdf5_built() {
  local prefix=$DEPS_DIR/hdf5-${HDF5_VERSION}-$1
  [[ -f $prefix/.larder-hdf5-version && $(cat "$prefix/.larder-hdf5-version") == "${HDF5_VERSION} $1" \
    && -x $prefix/bin/h5dump ]]
}

# Builds HDF5 (parallel, shared, C only, zlib and szip filters) with the given MPI's compiler.
build_hdf5() {
  local mpi=$1
  local prefix=$DEPS_DIR/hdf5-${HDF5_VERSION}-${mpi}
  local stamp=$prefix/.larder-hdf5-version
  hdf5_built "$mpi" && return 0
  local tarball
  tarball=$(fetch_hdf5_source)
  local build_dir
  build_dir=$(mktemp -d "${DEPS_DIR}/build-hdf5-${mpi}.XXXXXX")
  log "building hdf5 ${HDF5_VERSION} for ${mpi} into ${prefix} (about 7 minutes on 2 cores)"
  tar xzf "$tarball" -C "$build_dir"
  local cc=mpicc.${mpi}
  rm -rf "$prefix"
  (
    cd "$build_dir"/hdf5-*
    CC=$cc ./configure --prefix="$prefix" --enable-parallel --enable-shared --disable-static \
      --disable-fortran --disable-cxx --disable-java --disable-tests \
      --with-zlib --with-szlib --enable-build-mode=production >"$build_dir/configure.log" 2>&1 \
      || { log "hdf5 configure failed for ${mpi}; see $build_dir/configure.log"; exit 1; }
    # Only what Larder and h5py use: the library, the high-level library (h5py links it), the
    # compiler wrapper, and the two tools the tests compare (h5dump, h5ls). HDF5's other tools
    # would double the build (tens of seconds of CI per MPI each).
    local d
    for d in "${HDF5_PARTS[@]}"; do
      make -j"$(nproc)" -C "$d" >>"$build_dir/make.log" 2>&1 \
        || { log "hdf5 build failed for ${mpi} in ${d}; see $build_dir/make.log"; exit 1; }
    done
    for d in "${HDF5_PARTS[@]}"; do
      make -C "$d" install >>"$build_dir/install.log" 2>&1 \
        || { log "hdf5 install failed for ${mpi} in ${d}; see $build_dir/install.log"; exit 1; }
    done
  )
  echo "${HDF5_VERSION} ${mpi}" >"$stamp"
  rm -rf "$build_dir"
}

# h5py's source: the vendored release tarball (checked), else PyPI's when it answers. Prints the
# tarball's path, or nothing when there is none.
h5py_source() {
  local vendored=$VENDOR_DIR/h5py-${H5PY_VERSION}.tar.gz
  if [[ -f $vendored ]]; then
    if [[ -f $vendored.sha256 ]] && ! (cd "$VENDOR_DIR" && sha256sum --quiet -c "$vendored.sha256" \
        >/dev/null 2>&1); then
      log "$vendored does not match $vendored.sha256: not using it"
    else
      echo "$vendored"
      return 0
    fi
  fi
  local src_dir=$DEPS_DIR/src
  local downloaded=$src_dir/h5py-${H5PY_VERSION}.tar.gz
  if [[ -f $downloaded ]]; then echo "$downloaded"; return 0; fi
  mkdir -p "$src_dir"
  if "$PYTHON" -m pip download --quiet --no-deps --no-binary=:all: --no-build-isolation \
      --retries 0 --timeout 15 -d "$src_dir" "h5py==${H5PY_VERSION}" >/dev/null 2>&1 \
      && [[ -f $downloaded ]]; then
    log "downloaded h5py ${H5PY_VERSION}'s source from PyPI"
    echo "$downloaded"
  fi
}

h5py_stamp() { echo "${H5PY_VERSION} $1 hdf5-${HDF5_VERSION}"; }
# Whether the given MPI's h5py is built on its HDF5.
h5py_built() {
  local prefix=$DEPS_DIR/h5py-${H5PY_VERSION}-$1
  [[ -f $prefix/.larder-h5py-version && $(cat "$prefix/.larder-h5py-version") == "$(h5py_stamp "$1")" \
    && -f $prefix/h5py/__init__.py ]]
}

# Builds h5py (HDF5_MPI=OFF: no mpi4py needed; the HDF5 below it is the parallel one) for the
# given MPI's HDF5 into $DEPS_DIR/h5py-<version>-<mpi>. Never fails the setup: without a source it
# says that h5py cannot be built, and the h5py tests skip.
build_h5py() {
  local mpi=$1
  local hdf5=$DEPS_DIR/hdf5-${HDF5_VERSION}-${mpi}
  local prefix=$DEPS_DIR/h5py-${H5PY_VERSION}-${mpi}
  local stamp=$prefix/.larder-h5py-version
  local want
  want=$(h5py_stamp "$mpi")
  h5py_built "$mpi" && return 0
  local tarball
  tarball=${H5PY_TARBALL-$(h5py_source)}
  if [[ -z $tarball ]]; then
    log "h5py ${H5PY_VERSION} cannot be built: no source (${VENDOR_DIR}/h5py-${H5PY_VERSION}.tar.gz" \
        "is missing and PyPI cannot be reached); the h5py tests will be skipped"
    return 0
  fi
  local build_dir
  build_dir=$(mktemp -d "${DEPS_DIR}/build-h5py-${mpi}.XXXXXX")
  log "building h5py ${H5PY_VERSION} for ${mpi} into ${prefix} (about a minute)"
  tar xzf "$tarball" -C "$build_dir"
  rm -rf "$prefix"
  (
    cd "$build_dir"/h5py-*/
    # Compile its extensions two at a time (setuptools' build_ext option): 68 s instead of 112 s
    # here. The tarball ships no setup.cfg; this one holds only that option.
    printf '[build_ext]\nparallel = %s\n' "$(nproc)" >setup.cfg
    CC=mpicc.${mpi} HDF5_DIR=$hdf5 HDF5_MPI=OFF "$PYTHON" -m pip install --no-deps \
      --no-build-isolation --no-index --no-warn-script-location --target "$build_dir/out" . \
      >"$build_dir/build.log" 2>&1 \
      || { log "h5py build failed for ${mpi}; see $build_dir/build.log"; exit 1; }
  )
  mv "$build_dir/out" "$prefix"
  echo "$want" >"$stamp"
  rm -rf "$build_dir"
}

install_packages
mkdir -p "$DEPS_DIR"
# The sources are found once, before the builds start side by side.
for mpi in "${MPIS[@]}"; do
  if ! hdf5_built "$mpi"; then fetch_hdf5_source >/dev/null; break; fi
done
for mpi in "${H5PY_MPIS[@]}"; do
  if ! h5py_built "$mpi"; then H5PY_TARBALL=$(h5py_source); break; fi
done
# Each MPI's HDF5 (then its h5py), the MPIs side by side: HDF5's configure and much of its make
# run on one core, so the other MPI's build uses the second. On 2 cores one HDF5 alone took 422 s;
# both HDF5s and both h5py side by side took 728 s.
wants_h5py() {
  local m
  for m in "${H5PY_MPIS[@]}"; do [[ $m == "$1" ]] && return 0; done
  return 1
}
pids=()
for mpi in "${MPIS[@]}"; do
  (
    build_hdf5 "$mpi"
    if wants_h5py "$mpi"; then build_h5py "$mpi"; fi
  ) &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[[ $failed -eq 0 ]] || { log "a dependency build failed (its log is named above)"; exit 1; }
