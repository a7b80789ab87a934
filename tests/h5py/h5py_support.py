"""Shared by the h5py tests: h5py's directory (scripts/setup.sh builds it), or skip."""
import os
import sys

SKIP = 77


def h5py_env_or_skip(h5py_dir, here):
    """PYTHONPATH with the h5py built for this MPI and the tests' modules; exits 77 (ctest:
    skipped) with the reason when setup.sh could not build h5py."""
    if not os.path.isfile(os.path.join(h5py_dir, "h5py", "__init__.py")):
        print(f"SKIP: no h5py in {h5py_dir}: scripts/setup.sh builds it from "
              "../shared/vendor/h5py-3.10.0.tar.gz or PyPI, and had neither", flush=True)
        sys.exit(SKIP)
    return os.pathsep.join([h5py_dir, here])
