"""One task of the job step of e2e_slurm: reads every file under a directory whole (through the
preload library when it is on) and writes their SHA-256 to <out>.<SLURM_PROCID>.

    read_files.py <dir> <out>"""
import hashlib
import json
import os
import sys


def main():
    root, out = sys.argv[1:3]
    digests = {}
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                digests[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    with open(f"{out}.{os.environ['SLURM_PROCID']}", "w") as f:
        json.dump({"digests": digests, "ntasks": int(os.environ["SLURM_NTASKS"])}, f)


if __name__ == "__main__":
    main()
