// DLIO-style HDF5 files read by every rank through the connector in random order, h5py style
// (H5Oopen, one hyperslab per sample, fancy-index batches, labels by points as doubles): every
// read equals the same read through the native connector, and the job's stats show one PFS
// read per cached piece of each file. Three ways Larder gets started: by the job (as its
// MPI_Init hooks will), by the connector over MPI_COMM_WORLD (start=world), and by the
// connector over the communicator of an MPI-IO open.
#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include "tests/hdf5/h5_support.hpp"
#include "tests/mpi/mpi_fixture.hpp"

namespace larder::testing {
namespace {

constexpr DlioShape kShape{.samples = 96, .d1 = 64, .d2 = 96};
constexpr int kEpochs = 2;
const char* const kFiles[] = {"train_contig.h5", "train_gzip.h5"};

class DlioReadTest : public MpiFixture {
 protected:
  void SetUp() override {
    MpiFixture::SetUp();
    if (rank() == 0) {
      write_dlio_file(data(kFiles[0]), kShape, DlioLayout::kContiguous);
      write_dlio_file(data(kFiles[1]), kShape, DlioLayout::kChunkedGzip);
    }
    barrier();
  }

  std::uint64_t expected_pieces() const {
    std::uint64_t pieces = 0;
    for (const char* f : kFiles)
      pieces += (std::filesystem::file_size(data(f)) + chunk_size - 1) / chunk_size;
    return pieces;
  }
  std::uint64_t total_bytes() const {
    std::uint64_t bytes = 0;
    for (const char* f : kFiles) bytes += std::filesystem::file_size(data(f));
    return bytes;
  }

  // What the native connector reads: whole `records` and `labels`. (Read first and closed:
  // HDF5 1.14 mixes up a file held open at once through two connector stacks that it shares
  // one file object between, which an uncached open through the connector can be.)
  struct Expected {
    std::vector<std::uint8_t> records;
    std::vector<double> labels;
  };
  static Expected read_native(const std::string& path) {
    Hid fapl = native_fapl();
    Hid file = file_hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()));
    Expected e{std::vector<std::uint8_t>(kShape.samples * kShape.d1 * kShape.d2),
               std::vector<double>(kShape.samples)};
    Hid records = dataset_hid(H5Dopen2(file.get(), "records", H5P_DEFAULT));
    Hid labels = dataset_hid(H5Dopen2(file.get(), "labels", H5P_DEFAULT));
    EXPECT_GE(
        H5Dread(records.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, e.records.data()),
        0);
    EXPECT_GE(
        H5Dread(labels.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, e.labels.data()),
        0);
    return e;
  }
  static std::vector<std::uint8_t> samples_of(const Expected& e, const std::vector<hsize_t>& ids) {
    const std::size_t n = kShape.d1 * kShape.d2;
    std::vector<std::uint8_t> out;
    for (hsize_t i : ids)
      out.insert(out.end(), e.records.begin() + i * n, e.records.begin() + (i + 1) * n);
    return out;
  }

  // Every epoch, every sample in this rank's own random order, plus one fancy-index batch and
  // the labels of that batch, each compared with what the native connector read.
  void read_epochs(hid_t fapl, hid_t dxpl = H5P_DEFAULT) {
    for (const char* name : kFiles) {
      const Expected expected = read_native(data(name));
      Hid file = file_hid(H5Fopen(data(name).c_str(), H5F_ACC_RDONLY, fapl));
      ASSERT_TRUE(file.valid()) << name;
      Hid records = Hid(H5Oopen(file.get(), "records", H5P_DEFAULT), &H5Oclose);
      Hid labels = Hid(H5Oopen(file.get(), "labels", H5P_DEFAULT), &H5Oclose);
      std::vector<hsize_t> order(kShape.samples);
      std::iota(order.begin(), order.end(), 0);
      for (int epoch = 0; epoch < kEpochs; ++epoch) {
        std::mt19937_64 rng(static_cast<std::uint64_t>(rank() * 100 + epoch));
        std::shuffle(order.begin(), order.end(), rng);
        for (hsize_t i : order) {
          ASSERT_EQ(read_samples(records.get(), {i}, dxpl), samples_of(expected, {i}))
              << name << " sample " << i << " rank " << rank();
        }
        std::vector<hsize_t> batch(order.begin(), order.begin() + 8);
        std::sort(batch.begin(), batch.end());  // h5py wants increasing fancy indices
        EXPECT_EQ(read_samples(records.get(), batch, dxpl), samples_of(expected, batch));
        std::vector<double> labels_expected;
        for (hsize_t i : batch) labels_expected.push_back(expected.labels[i]);
        EXPECT_EQ(read_labels(labels.get(), batch, dxpl), labels_expected);
      }
    }
  }

  // dset[sorted indices], as h5py does it: a union of one hyperslab per sample.
  static std::vector<std::uint8_t> read_samples(hid_t dset, const std::vector<hsize_t>& ids,
                                                hid_t dxpl) {
    Hid fs = space_hid(H5Dget_space(dset));
    H5Sselect_none(fs.get());
    for (hsize_t i : ids) {
      const hsize_t start[3] = {i, 0, 0}, count[3] = {1, kShape.d1, kShape.d2};
      H5Sselect_hyperslab(fs.get(), H5S_SELECT_OR, start, nullptr, count, nullptr);
    }
    const hsize_t dims[3] = {ids.size(), kShape.d1, kShape.d2};
    Hid ms = space_hid(H5Screate_simple(3, dims, nullptr));
    std::vector<std::uint8_t> out(ids.size() * kShape.d1 * kShape.d2);
    EXPECT_GE(H5Dread(dset, H5T_NATIVE_UINT8, ms.get(), fs.get(), dxpl, out.data()), 0);
    return out;
  }

  static std::vector<double> read_labels(hid_t dset, const std::vector<hsize_t>& ids, hid_t dxpl) {
    Hid fs = space_hid(H5Dget_space(dset));
    H5Sselect_elements(fs.get(), H5S_SELECT_SET, ids.size(), ids.data());
    const hsize_t n = ids.size();
    Hid ms = space_hid(H5Screate_simple(1, &n, nullptr));
    std::vector<double> out(n);
    EXPECT_GE(H5Dread(dset, H5T_NATIVE_DOUBLE, ms.get(), fs.get(), dxpl, out.data()), 0);
    return out;
  }

  void expect_one_read_per_piece(const nlohmann::json& stats) {
    EXPECT_EQ(stats["ranks"], size());
    EXPECT_EQ(stats["pfs"]["read_ops"], expected_pieces());
    EXPECT_EQ(stats["pfs"]["bytes_read"], total_bytes());
    EXPECT_EQ(stats["misses"].get<std::uint64_t>() + stats["prefetches"].get<std::uint64_t>(),
              expected_pieces());
    EXPECT_EQ(stats["fallbacks"], 0);
    EXPECT_EQ(stats["pfs"]["stat_ops"], std::size(kFiles));
  }
};

// HDF5_VOL_CONNECTOR (set by ctest) makes the default property list use the connector.
TEST_F(DlioReadTest, LarderStartedByTheJobServesTheDefaultPropertyList) {
  init();
  read_epochs(H5P_DEFAULT);
  expect_one_read_per_piece(finalize());
}

TEST_F(DlioReadTest, ConnectorStartsLarderOverTheWorld) {
  ASSERT_FALSE(larder_initialized());
  Hid fapl = larder_fapl("start=world;under_vol=0;under_info={}");
  read_epochs(fapl.get());
  ASSERT_TRUE(larder_initialized());
  expect_one_read_per_piece(finalize());
}

TEST_F(DlioReadTest, MpioOpenStartsLarderOverItsCommunicator) {
  ASSERT_FALSE(larder_initialized());
  Hid fapl = plist_hid(H5Pcreate(H5P_FILE_ACCESS));
  ASSERT_GE(H5Pset_fapl_mpio(fapl.get(), MPI_COMM_WORLD, MPI_INFO_NULL), 0);
  ASSERT_GE(H5Pset_all_coll_metadata_ops(fapl.get(), true), 0);  // collective metadata reads
  Hid dxpl = plist_hid(H5Pcreate(H5P_DATASET_XFER));
  ASSERT_GE(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE), 0);
  read_epochs(fapl.get(), dxpl.get());
  ASSERT_TRUE(larder_initialized());
  expect_one_read_per_piece(finalize());
}

TEST_F(DlioReadTest, StartNeverLeavesTheJobUncached) {
  Hid fapl = larder_fapl("start=never;under_vol=0;under_info={}");
  read_epochs(fapl.get());
  EXPECT_FALSE(larder_initialized());
}

}  // namespace
}  // namespace larder::testing
