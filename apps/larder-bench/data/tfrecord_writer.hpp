// DLIO's TFRecord samples (tf_generator.py): per file, num_samples records, each a serialized
//   tf.train.Example{features: {'image': BytesList[d1*d2 raw bytes], 'size': Int64List[v]}}
// framed as TFRecord: u64le length, u32le masked_crc32c(length), data, u32le masked_crc32c(data).
// v is the nominal dimension int(sqrt(record_length)) in mlperf_storage v2.0 and d1*d2 in DLIO's
// HEAD (DlioLayout). Also writes DALI's index ({offset} {record bytes} per line), which DLIO
// creates with tfrecord2idx under {data_folder}/index/{train|valid}/{file}.idx.
// resnet50: 114 304-byte records (HEAD), 114 303 (v2.0); cosmoflow file 0: 2 898 530 / 2 898 528.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_TFRECORD_WRITER_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_TFRECORD_WRITER_HPP_

#include <cstdint>
#include <string>

#include "apps/larder-bench/common/result.hpp"
#include "apps/larder-bench/data/size_plan.hpp"

namespace larder::bench {

// The serialized Example around the image bytes: prefix + image + suffix.
struct ExampleFrame {
  std::string prefix;
  std::string suffix;
};
ExampleFrame example_frame(std::uint64_t image_bytes, std::int64_t size_value);

// Bytes of one framed record.
std::uint64_t tfrecord_record_size(std::uint64_t image_bytes, std::int64_t size_value);

// Writes the file; `index_out` receives the DALI index text.
Status write_tfrecord(const std::string& path, Dims dims, std::int64_t samples,
                      std::int64_t size_value, std::uint64_t seed, std::string& index_out);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_TFRECORD_WRITER_HPP_
