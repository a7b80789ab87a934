#!/usr/bin/env python3
"""Builds a pip-style Python environment tree from this machine's installed packages, the kind a
job imports from the parallel file system (issue 17's import-torch storm):

    <out>/site/            the Python packages `import <modules>` uses (copied, __pycache__ kept)
    <out>/site/torch/lib/  torch's own shared objects (libtorch*, libc10*, libshm*, ...), real files
    <out>/lib/             the rest of their shared-library closure (outside the C library)

Use it with PYTHONPATH=<out>/site and LD_LIBRARY_PATH=<out>/lib:<out>/site/torch/lib. Every copy
is a real file (symbolic links are followed), named as the objects that need it ask for it
(their DT_NEEDED names), so the loader finds the tree's copies before the system's.

    scripts/build-env-tree.py <out> [--modules torch,numpy] [--python /usr/bin/python3]

Prints what it copied (files and bytes) and writes <out>/manifest.json."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

# The C library's own objects stay the system's (the process has them before anything else).
SYSTEM = re.compile(r"^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|"
                    r"libutil\.so|libresolv|libnsl|libanl|libBrokenLocale|libmvec)")
TORCH_OWN = re.compile(r"^(libtorch|libc10|libshm|libcaffe2)")


def packages(python, modules):
    """The top-level packages (dirs or single files) under site directories that importing
    `modules` loads, with the directory each comes from."""
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "out = set()\n"
        "for mod in list(sys.modules.values()):\n"
        "    f = getattr(mod, '__file__', None) or ''\n"
        "    for marker in ('/dist-packages/', '/site-packages/'):\n"
        "        if marker in f:\n"
        "            base, rest = f.split(marker, 1)\n"
        "            out.add((base + marker.rstrip('/'), rest.split('/')[0]))\n"
        "print(json.dumps(sorted(out)))\n")
    done = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def needed_closure(path):
    """(DT_NEEDED name, resolved path) of everything `path` needs, from ldd."""
    done = subprocess.run(["ldd", path], capture_output=True, text=True)
    out = []
    for line in done.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+) \(", line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def materialise_links(src, dst):
    """Replaces each symbolic link copied from `src` to `dst` by what it points at (Debian's
    torch/lib links into /usr/lib); dangling ones (headers and test objects Debian ships apart)
    are removed."""
    for dirpath, dirs, files in os.walk(src):
        for name in dirs + files:
            s = os.path.join(dirpath, name)
            if not os.path.islink(s):
                continue
            d = os.path.join(dst, os.path.relpath(s, src))
            os.unlink(d)
            if os.path.isdir(s):
                shutil.copytree(s, d, symlinks=False)
            elif os.path.isfile(s):
                shutil.copy2(s, d)


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--modules", default="torch,numpy")
    ap.add_argument("--python", default="/usr/bin/python3")
    args = ap.parse_args()
    site = os.path.join(args.out, "site")
    lib = os.path.join(args.out, "lib")
    torch_lib = os.path.join(site, "torch", "lib")
    os.makedirs(site, exist_ok=True)
    os.makedirs(lib, exist_ok=True)

    tops = packages(args.python, args.modules.split(","))
    copied = {"python_files": 0, "python_bytes": 0, "objects": 0, "object_bytes": 0}
    for base, name in tops:
        src = os.path.join(base, name)
        dst = os.path.join(site, name)
        if os.path.isdir(src):
            shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
            materialise_links(src, dst)
        else:
            shutil.copy2(src, dst)
        print(f"package {name} from {base}", flush=True)
    # Objects in the packages that are links to the system's (Debian's torch/lib) become files.
    elves = []
    for dirpath, _, files in os.walk(site):
        for f in files:
            p = os.path.join(dirpath, f)
            if is_elf(p):
                elves.append(p)
            else:
                copied["python_files"] += 1
                copied["python_bytes"] += os.path.getsize(p)
    wanted = {}
    for n, p in enumerate(elves, 1):
        for name, resolved in needed_closure(p):
            if not SYSTEM.match(name) and not resolved.startswith(os.path.abspath(args.out)):
                wanted.setdefault(name, resolved)
        if n % 25 == 0 or n == len(elves):
            print(f"closure: {n}/{len(elves)} objects read, {len(wanted)} libraries needed",
                  flush=True)
    for name, resolved in sorted(wanted.items()):
        dst = os.path.join(torch_lib if TORCH_OWN.match(name) else lib, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not os.path.exists(dst):
            shutil.copy2(os.path.realpath(resolved), dst)
    for d in (site, lib):
        for dirpath, _, files in os.walk(d):
            for f in files:
                p = os.path.join(dirpath, f)
                if is_elf(p):
                    copied["objects"] += 1
                    copied["object_bytes"] += os.path.getsize(p)
    manifest = dict(copied, modules=args.modules, packages=[n for _, n in tops],
                    pythonpath=site, ld_library_path=f"{lib}:{torch_lib}")
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"tree {args.out}: {copied['objects']} shared objects, "
          f"{copied['object_bytes'] / 1e6:.1f} MB; {copied['python_files']} other files, "
          f"{copied['python_bytes'] / 1e6:.1f} MB")
    print(f"use: PYTHONPATH={site} LD_LIBRARY_PATH={lib}:{torch_lib}")


if __name__ == "__main__":
    sys.exit(main())
