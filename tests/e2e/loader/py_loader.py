"""One rank of e2e_loader: loads the test's shared objects the ways a Python job does, and
writes what it saw as JSON (compared with the same program run without Larder).

    py_loader.py <data dir> <out prefix> <outside library>   (writes <out prefix>.<rank>)

<data dir>/site holds the extension module lplext (which needs lib2/liba.so, which needs
lib/libb.so, both through RUNPATH $ORIGIN/..); plug/libplug.so is loaded by absolute path;
libvalue3.so is found through LD_LIBRARY_PATH (lib3); plug/libfork.so and plug/libspawn.so are
loaded by a forked and by a spawned worker."""
import ctypes
import json
import multiprocessing
import os
import sys


def load_value(path):
    return ctypes.CDLL(path).lib_value()


def error_of(name):
    try:
        ctypes.CDLL(name)
        return "loaded"
    except OSError as e:
        return str(e)


def main():
    data, out, outside = sys.argv[1:4]
    rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    out = f"{out}.{rank}"
    os.listdir(data)  # a managed call: the runtime is up from here on
    sys.path.insert(0, os.path.join(data, "site"))
    import lplext  # noqa: E402 (on purpose: after the path is set)

    result = {"ext_value": lplext.value(), "ext_file": lplext.__file__}
    own, dep, objects = lplext.where(data)
    result.update(dladdr_ext=own, dladdr_a=dep, phdr_names=sorted(objects))
    plug = ctypes.CDLL(os.path.join(data, "plug", "libplug.so"))
    result["plug_value"] = plug.plug_value()
    result["search_value"] = ctypes.CDLL("libvalue3.so").lib_value()
    result["outside_value"] = ctypes.CDLL(outside).lib_value()
    result["missing_name"] = error_of("libnothere.so")
    result["missing_path"] = error_of(os.path.join(data, "plug", "libnothere.so"))
    # A linker script named like a library (as conda ships libncurses.so): not an ELF object.
    result["script_name"] = error_of("libscript.so")
    result["script_path"] = error_of(os.path.join(data, "plug", "libscript.so"))
    # The same object again by its path: the loader finds it loaded (no second copy).
    again = ctypes.CDLL(os.path.join(data, "plug", "libplug.so"))
    result["same_handle"] = again._handle == plug._handle
    with multiprocessing.get_context("fork").Pool(1) as pool:
        result["fork_value"] = pool.apply(load_value, (os.path.join(data, "plug", "libfork.so"),))
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        result["spawn_value"] = pool.apply(load_value, (os.path.join(data, "plug", "libspawn.so"),))
    with open(out, "w") as f:
        json.dump(result, f, sort_keys=True)


if __name__ == "__main__":
    main()
