// The test files: DLIO's HDF5 layout and the file zoo, written with the native connector.
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/hdf5/h5_support.hpp"

namespace larder::testing {
namespace {

void check(herr_t rc, const char* what) {
  if (rc < 0) throw std::runtime_error(std::string("HDF5 call failed: ") + what);
}

Hid ok(Hid h, const char* what) {
  if (!h.valid()) throw std::runtime_error(std::string("HDF5 call failed: ") + what);
  return h;
}

Hid create_file(const std::string& path) {
  Hid fapl = native_fapl();
  return ok(file_hid(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get())), "create");
}

Hid simple_space(std::vector<hsize_t> dims) {
  return ok(space_hid(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)),
            "space");
}

// Creates `name` in `loc` and writes `data` (which must hold the whole dataset) when given.
Hid make_dataset(hid_t loc, const char* name, hid_t type, hid_t space, hid_t dcpl = H5P_DEFAULT,
                 const void* data = nullptr) {
  Hid d = ok(dataset_hid(H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)), name);
  if (data != nullptr) check(H5Dwrite(d.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), name);
  return d;
}

Hid chunked(std::vector<hsize_t> chunk, bool shuffle, int gzip_level) {
  Hid dcpl = plist_hid(H5Pcreate(H5P_DATASET_CREATE));
  check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()), "chunk");
  if (shuffle) check(H5Pset_shuffle(dcpl.get()), "shuffle");
  if (gzip_level >= 0) check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(gzip_level)), "gz");
  return dcpl;
}

template <class T>
void attribute(hid_t loc, const char* name, hid_t type, std::vector<hsize_t> dims, const T* data) {
  Hid space = dims.empty() ? space_hid(H5Screate(H5S_SCALAR)) : simple_space(dims);
  Hid a = Hid(H5Acreate2(loc, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT), &H5Aclose);
  check(H5Awrite(a.get(), type, data), name);
}

void write_numbers(hid_t file) {
  Hid g = Hid(H5Gcreate2(file, "numbers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), &H5Gclose);
  std::vector<std::int8_t> i8(100);
  for (std::size_t i = 0; i < i8.size(); ++i) i8[i] = static_cast<std::int8_t>(i * 7 - 300);
  make_dataset(g.get(), "int8", H5T_STD_I8LE, simple_space({100}).get(), H5P_DEFAULT, i8.data());
  std::vector<std::int32_t> i32(20 * 30);
  for (std::size_t i = 0; i < i32.size(); ++i) i32[i] = static_cast<std::int32_t>(i * i) - 5000;
  make_dataset(g.get(), "int32_2d", H5T_STD_I32BE, simple_space({20, 30}).get(), H5P_DEFAULT,
               i32.data());
  std::vector<std::uint64_t> u64(5000);
  for (std::size_t i = 0; i < u64.size(); ++i) u64[i] = i * 0x9E3779B97F4A7C15ull;
  make_dataset(g.get(), "uint64_gzip", H5T_STD_U64LE, simple_space({5000}).get(),
               chunked({512}, false, 6).get(), u64.data());
  std::vector<float> f32(40 * 50);
  for (std::size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<float>(i) * 0.25f - 3.0f;
  make_dataset(g.get(), "float32_shuffle_gzip", H5T_IEEE_F32LE, simple_space({40, 50}).get(),
               chunked({16, 16}, true, 4).get(), f32.data());
  std::vector<double> f64(4 * 5 * 6);
  for (std::size_t i = 0; i < f64.size(); ++i) f64[i] = 1.0 / static_cast<double>(i + 1);
  make_dataset(g.get(), "float64_3d", H5T_IEEE_F64BE, simple_space({4, 5, 6}).get(), H5P_DEFAULT,
               f64.data());
  make_dataset(g.get(), "float64_shuffle", H5T_IEEE_F64LE, simple_space({4, 5, 6}).get(),
               chunked({2, 5, 3}, true, -1).get(), f64.data());
  std::vector<std::int16_t> small(10);
  for (std::size_t i = 0; i < small.size(); ++i) small[i] = static_cast<std::int16_t>(i * 1000);
  Hid compact = plist_hid(H5Pcreate(H5P_DATASET_CREATE));
  check(H5Pset_layout(compact.get(), H5D_COMPACT), "compact");
  make_dataset(g.get(), "int16_compact", H5T_STD_I16LE, simple_space({10}).get(), compact.get(),
               small.data());
  const double scalar = 2.718281828;
  make_dataset(g.get(), "scalar", H5T_IEEE_F64LE, space_hid(H5Screate(H5S_SCALAR)).get(),
               H5P_DEFAULT, &scalar);
  make_dataset(g.get(), "empty", H5T_STD_I32LE, space_hid(H5Screate(H5S_NULL)).get());
  // Chunked with a fill value, half written: unwritten chunks read as the fill value.
  Hid fill = chunked({8}, false, 1);
  const std::int32_t fill_value = -7;
  check(H5Pset_fill_value(fill.get(), H5T_NATIVE_INT32, &fill_value), "fill");
  Hid partial =
      make_dataset(g.get(), "partial_fill", H5T_STD_I32LE, simple_space({64}).get(), fill.get());
  Hid sel = simple_space({64});
  const hsize_t start = 8, count = 24;
  check(H5Sselect_hyperslab(sel.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr), "sel");
  Hid mem = simple_space({24});
  std::vector<std::int32_t> some(24, 42);
  check(H5Dwrite(partial.get(), H5T_NATIVE_INT32, mem.get(), sel.get(), H5P_DEFAULT, some.data()),
        "partial");
}

struct Record {
  std::int32_t id;
  double value;
  char name[12];
  std::uint8_t flags[3];
};

Hid record_type() {
  Hid t = type_hid(H5Tcreate(H5T_COMPOUND, sizeof(Record)));
  Hid name = type_hid(H5Tcopy(H5T_C_S1));
  check(H5Tset_size(name.get(), 12), "strsize");
  const hsize_t three = 3;
  Hid flags = type_hid(H5Tarray_create2(H5T_NATIVE_UINT8, 1, &three));
  check(H5Tinsert(t.get(), "id", HOFFSET(Record, id), H5T_NATIVE_INT32), "id");
  check(H5Tinsert(t.get(), "value", HOFFSET(Record, value), H5T_NATIVE_DOUBLE), "value");
  check(H5Tinsert(t.get(), "name", HOFFSET(Record, name), name.get()), "name");
  check(H5Tinsert(t.get(), "flags", HOFFSET(Record, flags), flags.get()), "flags");
  return t;
}

void write_types(hid_t file) {
  Hid g = Hid(H5Gcreate2(file, "types", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), &H5Gclose);
  std::vector<Record> records(50);
  for (int i = 0; i < 50; ++i) {
    Record& r = records[static_cast<std::size_t>(i)];
    r = Record{i, i * 1.5, {}, {static_cast<std::uint8_t>(i), 1, 2}};
    std::snprintf(r.name, sizeof r.name, "rec-%d", i);
  }
  Hid rec = record_type();
  make_dataset(g.get(), "compound", rec.get(), simple_space({50}).get(), H5P_DEFAULT,
               records.data());
  check(H5Tcommit2(g.get(), "record_t", rec.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "cm");
  make_dataset(g.get(), "compound_committed", rec.get(), simple_space({50}).get(),
               chunked({10}, true, 5).get(), records.data());
  Hid str = type_hid(H5Tcopy(H5T_C_S1));
  check(H5Tset_size(str.get(), H5T_VARIABLE), "vlen str");
  std::vector<std::string> words = {"alpha", "", "a longer string with spaces", "δέλτα", "e"};
  std::vector<const char*> ptrs;
  for (const auto& w : words) ptrs.push_back(w.c_str());
  make_dataset(g.get(), "vlen_string", str.get(), simple_space({5}).get(), H5P_DEFAULT,
               ptrs.data());
  make_dataset(g.get(), "vlen_string_gzip", str.get(), simple_space({5}).get(),
               chunked({2}, false, 3).get(), ptrs.data());
  Hid seq = type_hid(H5Tvlen_create(H5T_NATIVE_INT32));
  std::vector<std::vector<std::int32_t>> rows = {{1}, {2, 3}, {}, {4, 5, 6, 7}};
  std::vector<hvl_t> vl;
  for (auto& r : rows) vl.push_back(hvl_t{r.size(), r.data()});
  make_dataset(g.get(), "vlen_int", seq.get(), simple_space({4}).get(), H5P_DEFAULT, vl.data());
  Hid color = type_hid(H5Tenum_create(H5T_NATIVE_UINT8));
  const std::array<const char*, 3> names = {"RED", "GREEN", "BLUE"};
  for (std::uint8_t v = 0; v < 3; ++v) check(H5Tenum_insert(color.get(), names[v], &v), "enum");
  std::vector<std::uint8_t> colors(30);
  for (std::size_t i = 0; i < colors.size(); ++i) colors[i] = static_cast<std::uint8_t>(i % 3);
  make_dataset(g.get(), "enum", color.get(), simple_space({30}).get(), chunked({7}, false, 2).get(),
               colors.data());
  attribute(g.get(), "vlen_attr", str.get(), {2}, ptrs.data());
  attribute(g.get(), "compound_attr", rec.get(), {}, records.data());
}

void write_links(hid_t file, const std::string& dir) {
  Hid lcpl = plist_hid(H5Pcreate(H5P_LINK_CREATE));
  check(H5Pset_create_intermediate_group(lcpl.get(), 1), "intermediate");
  Hid g3 = Hid(H5Gcreate2(file, "g1/g2/g3", lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), &H5Gclose);
  const std::array<std::int64_t, 6> deep = {1, -2, 3, -4, 5, -6};
  make_dataset(g3.get(), "deep", H5T_STD_I64LE, simple_space({2, 3}).get(), H5P_DEFAULT,
               deep.data());
  const std::int32_t level = 3;
  attribute(g3.get(), "level", H5T_NATIVE_INT32, {}, &level);
  check(H5Lcreate_soft("/g1/g2", file, "soft_to_g2", H5P_DEFAULT, H5P_DEFAULT), "soft");
  check(H5Lcreate_soft("/nowhere", file, "dangling", H5P_DEFAULT, H5P_DEFAULT), "dangling");
  check(H5Lcreate_hard(file, "/g1/g2/g3/deep", file, "hard_to_deep", H5P_DEFAULT, H5P_DEFAULT),
        "hard");
  check(H5Lcreate_external("zoo_ext.h5", "/target", file, "ext", H5P_DEFAULT, H5P_DEFAULT), "ext");
  hobj_ref_t refs[2];
  check(H5Rcreate(&refs[0], file, "/g1/g2/g3/deep", H5R_OBJECT, -1), "ref0");
  check(H5Rcreate(&refs[1], file, "/g1", H5R_OBJECT, -1), "ref1");
  make_dataset(file, "refs", H5T_STD_REF_OBJ, simple_space({2}).get(), H5P_DEFAULT, refs);
  Hid ext = create_file(dir + "/zoo_ext.h5");
  Hid target =
      Hid(H5Gcreate2(ext.get(), "target", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), &H5Gclose);
  const std::array<double, 3> values = {0.5, 1.5, 2.5};
  make_dataset(target.get(), "values", H5T_IEEE_F64LE, simple_space({3}).get(), H5P_DEFAULT,
               values.data());
}

void write_bulk(hid_t file) {
  // Large enough to cross many cache chunks, contiguous and compressed.
  std::vector<std::uint8_t> bulk(300000);
  for (std::size_t i = 0; i < bulk.size(); ++i) bulk[i] = static_cast<std::uint8_t>((i * 131) >> 3);
  make_dataset(file, "bulk", H5T_STD_U8LE, simple_space({bulk.size()}).get(), H5P_DEFAULT,
               bulk.data());
  make_dataset(file, "bulk_gzip", H5T_STD_U8LE, simple_space({bulk.size()}).get(),
               chunked({20000}, true, 1).get(), bulk.data());
}

}  // namespace

std::uint8_t dlio_byte(hsize_t sample, hsize_t row, hsize_t col) {
  std::uint64_t x = (sample * 0x9E3779B97F4A7C15ull) ^ (row * 131 + col * 7);
  x ^= x >> 29;
  return static_cast<std::uint8_t>(col % 4 == 0 ? x * 0xBF58476D1CE4E5B9ull >> 56
                                                : (row + col) / 8);
}

void write_dlio_file(const std::string& path, const DlioShape& s, DlioLayout layout) {
  Hid file = create_file(path);
  std::vector<std::uint8_t> records(s.samples * s.d1 * s.d2);
  std::size_t at = 0;
  for (hsize_t i = 0; i < s.samples; ++i)
    for (hsize_t r = 0; r < s.d1; ++r)
      for (hsize_t c = 0; c < s.d2; ++c) records[at++] = dlio_byte(i, r, c);
  Hid dcpl = layout == DlioLayout::kChunkedGzip ? chunked({1, s.d1, s.d2}, false, 4)
                                                : plist_hid(H5Pcreate(H5P_DATASET_CREATE));
  make_dataset(file.get(), "records", H5T_STD_U8LE, simple_space({s.samples, s.d1, s.d2}).get(),
               dcpl.get(), records.data());
  std::vector<std::int64_t> labels(s.samples);
  for (hsize_t i = 0; i < s.samples; ++i) labels[i] = static_cast<std::int64_t>(i % 10) - 3;
  make_dataset(file.get(), "labels", H5T_STD_I64LE, simple_space({s.samples}).get(), H5P_DEFAULT,
               labels.data());
}

void write_zoo(const std::string& dir) {
  Hid file = create_file(dir + "/zoo.h5");
  const char* title = "the larder file zoo";
  Hid fixed = type_hid(H5Tcopy(H5T_C_S1));
  check(H5Tset_size(fixed.get(), std::strlen(title) + 1), "title size");
  attribute(file.get(), "title", fixed.get(), {}, title);
  const std::array<std::int32_t, 4> dims = {1, 2, 3, 4};
  attribute(file.get(), "dims", H5T_STD_I32LE, {4}, dims.data());
  write_numbers(file.get());
  write_types(file.get());
  write_links(file.get(), dir);
  write_bulk(file.get());
}

}  // namespace larder::testing
