"""e2e_loader: shared objects through the cache (issue 17). The test builds two libraries that
find a third through RUNPATH $ORIGIN/..., a library loaded by absolute path, libraries found
through LD_LIBRARY_PATH and loaded by forked and spawned workers, a Python extension module and a
library outside the prefix, then runs loader/py_loader.py in 4 ranks on 2 emulated nodes with
the preload and the audit module (LD_AUDIT), and without either.

Checks: every result (values, __file__, dladdr and dl_iterate_phdr names, the loader's error
texts for missing libraries and for linker scripts named like libraries) equals the plain run's; each library under the prefix was read from
the PFS once in the job (Larder's PFS bytes are the libraries' bytes) and made into one node
file per node; the candidates that do not exist were answered without the PFS. Then the fault
cases: LD_BIND_NOW=1 (still served), a files directory on a noexec mount (as root: loads from the
original paths), a memory tier too small for the libraries (with LD_BIND_NOW=1: the loads fall
back to the original paths), a process whose rank is gone and a process with no rank (LD_AUDIT
alone): same results."""
import argparse
import json
import os
import subprocess
import sysconfig

from e2e_util import PYTHON, Job, check, common_args, read_stats

RANKS = 4
NODE_SIZE = 2
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loader")


def cc(out, sources, *flags):
    os.makedirs(os.path.dirname(out), exist_ok=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", out, *sources, *flags], check=True)


def build(data, outside):
    """The libraries under the prefix (`data`), by name; and one outside it."""
    lib, lib2, lib3 = (os.path.join(data, d) for d in ("lib", "lib2", "lib3"))
    runpath = lambda rel: f"-Wl,--enable-new-dtags,-rpath,$ORIGIN/{rel}"  # noqa: E731
    built = {
        "libb": os.path.join(lib, "libb.so"),
        "liba": os.path.join(lib2, "liba.so"),
        "plug": os.path.join(data, "plug", "libplug.so"),
        "value3": os.path.join(lib3, "libvalue3.so"),
        "fork": os.path.join(data, "plug", "libfork.so"),
        "spawn": os.path.join(data, "plug", "libspawn.so"),
        "ext": os.path.join(data, "site", "lplext" + sysconfig.get_config_var("EXT_SUFFIX")),
    }
    cc(built["libb"], [os.path.join(HERE, "libb.c")])
    cc(built["liba"], [os.path.join(HERE, "liba.c")], f"-L{lib}", "-lb", runpath("../lib"))
    cc(built["plug"], [os.path.join(HERE, "libplug.c")], f"-L{lib}", "-lb", runpath("../lib"))
    for key, value in (("value3", 3), ("fork", 5), ("spawn", 7)):
        cc(built[key], [os.path.join(HERE, "libvalue.c")], f"-DVALUE={value}")
    cc(outside, [os.path.join(HERE, "libvalue.c")], "-DVALUE=11")
    for d in (lib3, os.path.join(data, "plug")):  # linker scripts named like libraries
        with open(os.path.join(d, "libscript.so"), "w") as f:
            f.write("/* GNU ld script */\nINPUT(-lnothere)\n")
    cc(built["ext"], [os.path.join(HERE, "lplext.c")], f"-I{sysconfig.get_paths()['include']}",
       f"-L{lib2}", "-la", runpath("../lib2"))
    return built


def results(prefix, n):
    out = []
    for r in range(n):
        with open(f"{prefix}.{r}") as f:
            out.append(json.load(f))
    return out


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--audit", required=True)
    args = parser.parse_args()
    job = Job(args, "loader")
    try:
        outside = os.path.join(job.root, "outside", "libvalue11.so")
        built = build(job.data, outside)
        # The libraries, and the linker scripts whose first bytes are read to see they are not
        # ELF objects.
        scripts = [os.path.join(job.data, d, "libscript.so") for d in ("lib3", "plug")]
        lib_bytes = sum(os.path.getsize(p) for p in list(built.values()) + scripts)
        program = os.path.join(HERE, "py_loader.py")
        search = {"LD_LIBRARY_PATH": os.path.join(job.data, "lib3")}

        def run(tag, env, n=RANKS):
            prefix = os.path.join(job.root, tag)
            job.mpiexec(n, [PYTHON, program, job.data, prefix, outside], env, timeout=180)
            return results(prefix, n)

        plain = run("plain", job.env(preload=False, extra=search))
        print("plain:", json.dumps(plain[0], sort_keys=True))
        check(plain[0]["ext_value"] == 43 and plain[0]["plug_value"] == 84 and
              plain[0]["fork_value"] == 5 and plain[0]["spawn_value"] == 7,
              "the plain run computes the expected values")

        stats = os.path.join(job.root, "stats.json")
        env = job.env(stats=stats, extra=dict(search, LD_AUDIT=args.audit,
                                              LARDER_NODE_SIZE=str(NODE_SIZE)))
        got = run("larder", env)
        for r, g in enumerate(got):
            diff = {k: (g.get(k), plain[r].get(k)) for k in set(g) | set(plain[r])
                    if g.get(k) != plain[r].get(k)}
            check(not diff, f"rank {r}: every result equals the plain run's {diff or ''}")
        s = read_stats(stats)
        print("loader:", s.get("loader"), "node:", s.get("node", {}).get("files"),
              "pfs:", s["pfs"])
        nodes = RANKS // NODE_SIZE
        check(s["pfs"]["bytes_read"] == lib_bytes,
              f"each library under the prefix was read from the PFS once in the job "
              f"({s['pfs']['bytes_read']} bytes, the libraries have {lib_bytes})")
        check(s["node"]["files"] == nodes * (len(built) + len(scripts)),
              f"one node file per library (and linker script) per node ({s['node']['files']})")
        # Loads of the 4 ranks (ext, liba, libb, plug, value3) and their 4 workers (fork, spawn).
        check(s["loader"]["objects"] == RANKS * 7,
              f"every load under the prefix was served from a node file ({s['loader']['objects']})")
        # Only the linker scripts (by name and by path, in every rank) go to their originals.
        check(s["loader"]["absent"] > 0 and s["loader"]["original"] == RANKS * 2,
              f"candidates that do not exist were answered from the cache "
              f"({s['loader']['absent']}), the linker scripts alone loaded from their originals "
              f"({s['loader']['original']})")

        print("node file bytes held twice:", s["node"]["file_dup_bytes"])
        check(s["node"]["file_dup_bytes"] == 0,
              "every node file holds its chunks itself (none copied from an arena)")

        # The same over the MPI data path: other nodes read the node files (segments) through
        # a dynamic window instead of UCX.
        mpi_stats = os.path.join(job.root, "mpi.json")
        env_mpi = job.env(stats=mpi_stats, extra=dict(search, LD_AUDIT=args.audit,
                                                      LARDER_NODE_SIZE=str(NODE_SIZE),
                                                      LARDER_TRANSPORT="mpi"))
        got = run("larder-mpi", env_mpi)
        s = read_stats(mpi_stats)
        check(got == plain and s["pfs"]["bytes_read"] == lib_bytes and
              s["node"]["files"] == nodes * (len(built) + len(scripts)) and
              s["node"]["file_dup_bytes"] == 0 and
              s["transport"]["bytes"] > 0,
              f"LARDER_TRANSPORT=mpi: the same results, the PFS read once, node files read by "
              f"the other node ({s['transport']['bytes']} bytes over MPI RMA)")

        # LD_BIND_NOW=1 (glibc binds every symbol at load; Spindle's issue #37): still served.
        now_stats = os.path.join(job.root, "now.json")
        got = run("now", job.env(stats=now_stats, extra=dict(
            search, LD_AUDIT=args.audit, LD_BIND_NOW="1", LARDER_NODE_SIZE=str(NODE_SIZE))))
        s = read_stats(now_stats)
        check(got == plain and s["loader"]["objects"] == RANKS * 7,
              f"LD_BIND_NOW=1: the same results, every load served from a node file "
              f"({s['loader']['objects']})")

        # A files directory on a noexec mount (Docker's /dev/shm): nothing could be mapped for
        # execution from it, so every object loads from its original path, and loads work.
        if os.geteuid() == 0:
            noexec = os.path.join(job.root, "noexec-shm")
            os.makedirs(noexec)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,size=256m", "tmpfs", noexec],
                           check=True)
            try:
                ne_stats = os.path.join(job.root, "noexec.json")
                got = run("noexec", job.env(stats=ne_stats, extra=dict(
                    search, LD_AUDIT=args.audit, LARDER_NODE_SIZE=str(NODE_SIZE),
                    LARDER_SHM_DIR=noexec)))
                s = read_stats(ne_stats)
                check(got == plain and s["loader"]["objects"] == 0,
                      f"LARDER_SHM_DIR on a noexec mount: the same results, objects from their "
                      f"original paths ({s['loader']})")
            finally:
                subprocess.run(["umount", noexec], check=False)

        # A memory tier too small for the node files, and LD_BIND_NOW=1 (glibc's audit
        # interface and immediate binding together): every load falls back to its original path.
        full_stats = os.path.join(job.root, "full.json")
        small = job.env(stats=full_stats,
                        extra=dict(search, LD_AUDIT=args.audit, LD_BIND_NOW="1",
                                   LARDER_NODE_SIZE=str(NODE_SIZE), LARDER_MEM="128K"))
        got = run("full", small)
        s = read_stats(full_stats)
        check(all(g == p for g, p in zip(got, plain)) and s["loader"]["original"] > 0,
              f"a full tier (LD_BIND_NOW=1): the same results, {s['loader']['original']} loads "
              f"from the original paths")

        # The rank gone: a process whose agent socket names a rank that no longer exists (a
        # worker that outlived its rank); the module cannot connect and loads the originals.
        gone_name = f"@larder-{os.getuid()}-4194000-deadbeef"
        gone = job.env(preload=False, extra=dict(search, LD_AUDIT=args.audit,
                                                 LARDER_AGENT=gone_name,
                                                 LARDER_AGENT_SERVING=gone_name))
        prefix = os.path.join(job.root, "gone")
        subprocess.run([PYTHON, program, job.data, prefix, outside], env=gone, check=True,
                       timeout=120 * args.timeout_scale)
        check(results(prefix, 1)[0] == plain[0], "the rank gone: the same results")

        # A process with no rank: the audit module alone (no preload, no launcher).
        lone = job.env(preload=False, extra=dict(search, LD_AUDIT=args.audit))
        prefix = os.path.join(job.root, "lone")
        subprocess.run([PYTHON, program, job.data, prefix, outside], env=lone, check=True,
                       timeout=120 * args.timeout_scale)
        check(results(prefix, 1)[0] == plain[0], "a process with no rank: the same results")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
