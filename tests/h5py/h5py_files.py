"""The h5py tests' files and the digest of everything in one, as h5py reads it.

write_h5py_zoo(path) writes, with h5py itself, a file with the kinds of tests/hdf5's zoo
(integers, floats, compound with array and string fields, variable-length strings and sequences,
enums, object and region references, contiguous, chunked with gzip, shuffle, fletcher32,
scale-offset and h5py's own lzf filter, resizable, scalar and empty datasets, fill values,
attributes of every kind, nested and ordered groups, soft, dangling, hard and external links) and
a large dataset that spans many cache chunks. digest(path) walks a file through every link
(following soft and external links) and returns {object path: text} with each dataset's type,
shape, storage properties, attributes and its values: whole, and through a hyperslab with a
step and a fancy-index selection (h5py's unions of hyperslabs)."""
import hashlib

import h5py
import numpy as np


def write_h5py_zoo(path, ext_name):
    rng = np.random.default_rng(5)
    with h5py.File(ext_name, "w") as ext:
        ext.create_dataset("target/values", data=np.arange(7, dtype="<f8") / 3)
    with h5py.File(path, "w", track_order=True) as f:
        f.attrs["title"] = "the h5py zoo"
        f.attrs["dims"] = np.array([1, 2, 3, 4], dtype="<i4")
        f.attrs["vlen_words"] = ["alpha", "", "δέλτα"]
        f.attrs["empty"] = h5py.Empty("f4")
        n = f.create_group("numbers")
        n["int8"] = (np.arange(100) * 7 - 300).astype("i1")
        n["uint16_be"] = np.arange(300, dtype=">u2")
        n.create_dataset("lzf", data=rng.standard_normal((60, 50)).astype("<f4"), chunks=(16, 16),
                         compression="lzf")
        n.create_dataset("gzip_shuffle", data=np.arange(5000, dtype="<u8") * 0x9E3779B9,
                         chunks=(512,), compression="gzip", compression_opts=6, shuffle=True)
        n.create_dataset("fletcher32", data=np.arange(4000, dtype="<i8") - 2000, chunks=(300,),
                         fletcher32=True)
        n.create_dataset("scaleoffset", data=np.arange(3000, dtype="<i4") % 97, chunks=(256,),
                         scaleoffset=0)
        n.create_dataset("fill", shape=(64,), dtype="<i4", chunks=(8,), fillvalue=-7)[8:32] = 42
        n.create_dataset("resizable", data=np.arange(10.0), maxshape=(None,), chunks=(4,))
        n["resizable"].resize((17,))
        n["complex"] = (np.arange(12) + 1j * np.arange(12)[::-1]).astype("<c16")
        n["bool"] = np.arange(30) % 3 == 0
        n["scalar"] = np.float64(2.718281828)
        n.create_dataset("empty", data=h5py.Empty("<i4"))
        n["float64_3d_be"] = (1.0 / (np.arange(120) + 1)).reshape(4, 5, 6).astype(">f8")
        t = f.create_group("types")
        rec = np.dtype([("id", "<i4"), ("value", "<f8"), ("name", "S12"), ("flags", "u1", (3,))])
        records = np.zeros(50, dtype=rec)
        records["id"] = np.arange(50)
        records["value"] = np.arange(50) * 1.5
        records["name"] = [f"rec-{i}".encode() for i in range(50)]
        records["flags"] = [(i % 256, 1, 2) for i in range(50)]
        t["compound"] = records
        t["record_t"] = rec  # a committed datatype
        t.create_dataset("compound_committed", data=records, dtype=t["record_t"], chunks=(10,),
                         compression="gzip", shuffle=True)
        words = ["alpha", "", "a longer string with spaces", "δέλτα", "e"]
        t.create_dataset("vlen_string", data=words, dtype=h5py.string_dtype())
        t.create_dataset("vlen_string_gzip", data=words, dtype=h5py.string_dtype(), chunks=(2,),
                         compression="gzip")
        t["fixed_string"] = np.array([b"abc", b"de", b""], dtype="S10")
        seq = t.create_dataset("vlen_int", (4,), dtype=h5py.vlen_dtype(np.dtype("<i4")))
        for i, row in enumerate(([1], [2, 3], [], [4, 5, 6, 7])):
            seq[i] = np.array(row, dtype="<i4")
        color = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="u1")
        t.create_dataset("enum", data=np.arange(30, dtype="u1") % 3, dtype=color, chunks=(7,),
                         compression="gzip")
        t.attrs["compound_attr"] = records[3]
        t.attrs["vlen_attr"] = np.array(words[:2], dtype=h5py.string_dtype())
        g3 = f.create_group("g1/g2/g3")
        g3["deep"] = np.array([[1, -2, 3], [-4, 5, -6]], dtype="<i8")
        g3.attrs["level"] = np.int32(3)
        f["soft_to_g2"] = h5py.SoftLink("/g1/g2")
        f["dangling"] = h5py.SoftLink("/nowhere")
        f["hard_to_deep"] = g3["deep"]
        f["ext"] = h5py.ExternalLink(ext_name.split("/")[-1], "/target")
        refs = f.create_dataset("refs", (2,), dtype=h5py.ref_dtype)
        refs[0] = g3["deep"].ref
        refs[1] = f["g1"].ref
        region = f.create_dataset("region_refs", (1,), dtype=h5py.regionref_dtype)
        region[0] = n["gzip_shuffle"].regionref[10:20]
        f.create_dataset("bulk", data=rng.integers(0, 256, 3_000_000, dtype="u1"))
        f.create_dataset("bulk_chunked", data=rng.integers(0, 256, (64, 128, 96), dtype="u1"),
                         chunks=(1, 128, 96), compression="gzip", compression_opts=1)


def canon(value, f):
    """A stable text for a value h5py returned."""
    if isinstance(value, h5py.Empty):
        return f"Empty({value.dtype.str})"
    if isinstance(value, h5py.RegionReference):  # (a subclass of Reference)
        return "regionref:" + (f[value].name if value else "null") + ":" + \
            canon(f[f[value].name][value], f)
    if isinstance(value, h5py.Reference):
        return "ref:" + (f[value].name if value else "null")
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O":
            return f"{value.shape}[" + ",".join(canon(v, f) for v in value.ravel()) + "]"
        return f"{value.dtype.str}{value.shape}:" + hashlib.sha256(value.tobytes()).hexdigest()
    if isinstance(value, np.void):
        return "void:" + hashlib.sha256(value.tobytes()).hexdigest()
    if isinstance(value, (bytes, str, int, float, complex, np.generic)):
        return repr(value)
    return repr(value)


def dataset_text(d, f):
    parts = [f"dtype={d.dtype!r}", f"shape={d.shape}", f"chunks={d.chunks}",
             f"compression={d.compression}/{d.compression_opts}", f"shuffle={d.shuffle}",
             f"fletcher32={d.fletcher32}", f"scaleoffset={d.scaleoffset}",
             f"fill={canon(d.fillvalue, f) if d.shape is not None else None}",
             f"enum={h5py.check_enum_dtype(d.dtype)}"]
    if d.shape is None:
        parts.append("value=" + canon(d[()], f))
    else:
        parts.append("value=" + canon(d[()], f))
        if len(d.shape) >= 1 and d.shape[0] > 2:
            parts.append("step=" + canon(d[1::2], f))
            parts.append("fancy=" + canon(d[sorted({0, 2, d.shape[0] - 1})], f))
    return " ".join(parts)


def attrs_text(obj, f):
    return " ".join(f"@{k}={canon(obj.attrs[k], f)}" for k in sorted(obj.attrs))


def digest(path):
    """{path inside the file: text} for every object reachable from the root."""
    out = {}
    with h5py.File(path, "r") as f:
        def walk(group, prefix, depth):
            out[prefix or "/"] = "group " + attrs_text(group, f)
            for name in group:
                full = f"{prefix}/{name}"
                link = group.get(name, getlink=True)
                if isinstance(link, h5py.SoftLink):
                    out[full + "#link"] = f"soft:{link.path}"
                elif isinstance(link, h5py.ExternalLink):
                    out[full + "#link"] = f"external:{link.filename}:{link.path}"
                obj = group.get(name)
                if obj is None:
                    out[full] = "dangling"
                elif isinstance(obj, h5py.Dataset):
                    out[full] = dataset_text(obj, f) + " " + attrs_text(obj, f)
                elif isinstance(obj, h5py.Datatype):
                    out[full] = f"datatype {obj.dtype!r}"
                elif depth < 6:
                    walk(obj, full, depth + 1)
        walk(f, "", 0)
    return out
