// Workload YAML: DLIO's keys and defaults, the shipped configs, --set overrides, errors.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "apps/larder-bench/config/workload_load.hpp"

namespace larder::bench {
namespace {

Result<LoadedWorkload> load_text(const std::string& yaml,
                                 const std::vector<std::string>& overrides = {}) {
  YAML::Node tree = YAML::Load(yaml);
  for (const std::string& o : overrides) {
    if (Status s = apply_override(tree, o); !s.ok()) return s;
  }
  return load_workload(tree);
}

std::string config(const std::string& name) {
  return std::string(LARDER_BENCH_CONFIG_DIR) + "/" + name;
}

TEST(WorkloadConfigTest, EmptyConfigGetsDliosDefaults) {
  auto w = load_text("{}");
  ASSERT_TRUE(w.ok()) << w.status().message();
  const Workload& d = w->workload;
  EXPECT_EQ(d.dataset.record_length, 65536);
  EXPECT_EQ(d.dataset.num_files_train, 8);
  EXPECT_EQ(d.dataset.num_samples_per_file, 1);
  EXPECT_EQ(d.dataset.data_folder, "./data");
  EXPECT_EQ(d.dataset.file_prefix, "img");
  EXPECT_EQ(d.dataset.format, Format::kTfrecord);
  EXPECT_EQ(d.reader.data_loader, LoaderKind::kTensorflow);
  EXPECT_EQ(d.reader.batch_size, 1);
  EXPECT_EQ(d.reader.read_threads, 1);
  EXPECT_EQ(d.reader.prefetch_size, 2);
  EXPECT_EQ(d.reader.shuffle_size, 1024);
  EXPECT_EQ(d.reader.sample_shuffle, Shuffle::kOff);
  EXPECT_EQ(d.transfer_bytes(), 256u * 1024);
  EXPECT_EQ(d.train.epochs, 1);
  EXPECT_EQ(d.train.seed, 123u);
  EXPECT_TRUE(d.train.seed_change_epoch);
  EXPECT_TRUE(d.train.computation_time.is_zero());
  EXPECT_DOUBLE_EQ(d.metric.au, 0.90);
  EXPECT_EQ(d.metric.exclude_start_steps, 1);
  EXPECT_EQ(d.metric.exclude_end_steps, 0);
  EXPECT_TRUE(w->warnings.empty());
}

TEST(WorkloadConfigTest, ReadsTheShippedUnet3dConfig) {
  auto w = load_workload_file(config("unet3d_h100.yaml"), {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  const Workload& d = w->workload;
  EXPECT_EQ(d.framework, "pytorch");
  EXPECT_EQ(d.dataset.format, Format::kNpz);
  EXPECT_EQ(d.dataset.num_files_train, 168);
  EXPECT_EQ(d.dataset.record_length, 146600628);
  EXPECT_EQ(d.dataset.record_length_stdev, 68341808);
  EXPECT_EQ(d.dataset.data_folder, "data/unet3d");  // trailing '/' stripped
  EXPECT_EQ(d.reader.data_loader, LoaderKind::kPytorch);
  EXPECT_EQ(d.reader.batch_size, 7);
  EXPECT_EQ(d.reader.read_threads, 4);
  EXPECT_EQ(d.reader.file_shuffle, Shuffle::kSeed);
  EXPECT_DOUBLE_EQ(d.train.computation_time.mean, 0.323);
  EXPECT_EQ(d.train.epochs, 5);
  ASSERT_EQ(w->warnings.size(), 1u);  // checkpointing is not emulated
  EXPECT_NE(w->warnings[0].find("checkpoint"), std::string::npos);
}

TEST(WorkloadConfigTest, EveryShippedConfigLoads) {
  for (const char* name : {"unet3d_a100.yaml", "resnet50_h100.yaml", "resnet50_a100.yaml",
                           "cosmoflow_h100.yaml", "cosmoflow_a100.yaml", "unet3d_demo.yaml",
                           "resnet50_demo.yaml", "cosmoflow_demo.yaml", "hdf5_demo.yaml"}) {
    auto w = load_workload_file(config(name), {});
    ASSERT_TRUE(w.ok()) << name << ": " << w.status().message();
    for (const std::string& warning : w->warnings) {
      EXPECT_EQ(warning.find("unknown key"), std::string::npos) << name << ": " << warning;
    }
  }
  auto resnet = load_workload_file(config("resnet50_a100.yaml"), {});
  EXPECT_DOUBLE_EQ(resnet->workload.dataset.record_length, 114660.07);
  EXPECT_DOUBLE_EQ(resnet->workload.train.computation_time.mean, 0.435);
  auto cosmo = load_workload_file(config("cosmoflow_h100.yaml"), {});
  EXPECT_DOUBLE_EQ(cosmo->workload.metric.au, 0.70);
  EXPECT_EQ(cosmo->workload.reader.shuffle_size, 2);
}

TEST(WorkloadConfigTest, OverridesUseDliosDottedNames) {
  auto w = load_workload_file(
      config("unet3d_demo.yaml"),
      {"train.epochs=2", "++workload.dataset.data_folder=/x/y/", "reader.read_threads=0",
       "train.computation_time={mean: 0.1, stdev: 0.01}", "workload.metric.au=0.5"});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->workload.train.epochs, 2);
  EXPECT_EQ(w->workload.dataset.data_folder, "/x/y");
  EXPECT_EQ(w->workload.reader.read_threads, 0);
  EXPECT_EQ(w->workload.train.computation_time.kind, TimeSpec::Kind::kNormal);
  EXPECT_DOUBLE_EQ(w->workload.train.computation_time.stdev, 0.01);
  EXPECT_DOUBLE_EQ(w->workload.metric.au, 0.5);
  EXPECT_EQ(w->tree["train"]["epochs"].as<int>(), 2);  // kept for .hydra/config.yaml
}

TEST(WorkloadConfigTest, BadValuesNameTheKey) {
  auto bad_type = load_text("{}", {"dataset.num_files_train=abc"});
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.status().message().find("dataset.num_files_train"), std::string::npos);
  auto bad_batch = load_text("{}", {"reader.batch_size=0"});
  ASSERT_FALSE(bad_batch.ok());
  EXPECT_NE(bad_batch.status().message().find("reader.batch_size"), std::string::npos);
  auto bad_format = load_text("{}", {"dataset.format=parquet"});
  ASSERT_FALSE(bad_format.ok());
  EXPECT_NE(bad_format.status().message().find("accepted npz, npy, hdf5, tfrecord"),
            std::string::npos);
  YAML::Node tree = YAML::Load("{}");
  EXPECT_FALSE(apply_override(tree, "train.epochs").ok());
  EXPECT_FALSE(apply_override(tree, "train..epochs=1").ok());
  EXPECT_FALSE(load_workload_file("/nonexistent/w.yaml", {}).ok());
}

TEST(WorkloadConfigTest, UnknownKeysAreReported) {
  auto w = load_text("{dataset: {num_file_train: 3}, reader: {batch_size: 2}}");
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->warnings.size(), 1u);
  EXPECT_EQ(w->warnings[0], "unknown key dataset.num_file_train is ignored");
}

TEST(TimeSpecTest, ParsesDliosDistributions) {
  std::mt19937_64 rng(1);
  auto uniform = TimeSpec::parse(YAML::Load("{type: uniform, min: 1, max: 2}"), "t");
  ASSERT_TRUE(uniform.ok());
  for (int i = 0; i < 100; ++i) {
    const double v = uniform->draw(rng);
    EXPECT_GE(v, 1.0);
    EXPECT_LE(v, 2.0);
  }
  auto normal = TimeSpec::parse(YAML::Load("{mean: -5, stdev: 0}"), "t");
  EXPECT_DOUBLE_EQ(normal->draw(rng), 5.0);  // abs(), as DLIO sleeps
  EXPECT_EQ(TimeSpec::parse(YAML::Load("0.323"), "t")->describe(), "0.323");
  EXPECT_FALSE(TimeSpec::parse(YAML::Load("{type: weibull}"), "t").ok());
  for (const char* kind : {"{type: gamma, shape: 2, scale: 0.1}", "{type: exponential, scale: 1}",
                           "{type: poisson, lam: 3}"}) {
    auto t = TimeSpec::parse(YAML::Load(kind), "t");
    ASSERT_TRUE(t.ok()) << kind;
    EXPECT_GE(t->draw(rng), 0.0);
  }
}

}  // namespace
}  // namespace larder::bench
