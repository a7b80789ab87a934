#include "runtime/config/config.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>

namespace larder {
namespace {

Result<Config> parse(const std::map<std::string, std::string>& env) {
  return Config::parse([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(ConfigTest, DefaultsWhenNothingIsSet) {
  auto c = parse({});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->enabled);
  EXPECT_TRUE(c->prefixes.empty());
  EXPECT_EQ(c->chunk_size, 4u << 20);
  EXPECT_EQ(c->mem_budget, default_mem_budget());
  EXPECT_EQ(c->disk_budget, 0u);
  EXPECT_EQ(c->shm_dir, "/dev/shm");
  EXPECT_TRUE(c->stats_path.empty());
  EXPECT_EQ(c->node_size, 0);
  EXPECT_EQ(c->prefetch_stage, 128ull << 20);
}

TEST(ConfigTest, ParsesEveryVariable) {
  auto c = parse({{"LARDER_PREFIX", "/lus/data//x/:/lus/env/./y"},
                  {"LARDER_MEM", "8G"},
                  {"LARDER_DISK", "100g"},
                  {"LARDER_CHUNK", "1M"},
                  {"LARDER_DIR", "/local/scratch/"},
                  {"LARDER_TRANSPORT", "mpi"},
                  {"LARDER_DIRECTORY_OPS", "messages"},
                  {"LARDER_STATS", "/tmp/stats.json"},
                  {"LARDER_LOG", "debug"},
                  {"LARDER_NODE_SIZE", "2"},
                  {"LARDER_DIR_SLOTS", "1024"},
                  {"LARDER_DIR_ENTRIES", "3000000000"},
                  {"LARDER_TIMEOUT", "5"},
                  {"LARDER_REVALIDATE", "off"},
                  {"LARDER_PREFETCH_STAGE", "0"},
                  {"LARDER_ENABLE", "yes"}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_EQ(c->prefixes.size(), 2u);
  EXPECT_EQ(c->prefixes[0], "/lus/data/x");
  EXPECT_EQ(c->prefixes[1], "/lus/env/y");
  EXPECT_EQ(c->mem_budget, 8ull << 30);
  EXPECT_EQ(c->disk_budget, 100ull << 30);
  EXPECT_EQ(c->chunk_size, 1u << 20);
  EXPECT_EQ(c->local_dir, "/local/scratch");
  EXPECT_EQ(c->transport, TransportKind::kMpi);
  EXPECT_EQ(c->directory_ops, DirectoryOps::kMessages);
  EXPECT_EQ(c->stats_path, "/tmp/stats.json");
  EXPECT_EQ(c->log_level, log::Level::kDebug);
  EXPECT_EQ(c->node_size, 2);
  EXPECT_EQ(c->dir_slots, 1024u);
  EXPECT_EQ(c->dir_entries, 3000000000ull);
  EXPECT_EQ(c->wait_timeout, std::chrono::seconds(5));
  EXPECT_EQ(c->revalidate, std::chrono::seconds(0));
  EXPECT_EQ(c->prefetch_stage, 0u);
}

TEST(ConfigTest, DirectoryOpsDefaultToAutoAndAcceptEachMode) {
  auto none = parse({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->directory_ops, DirectoryOps::kAuto);
  auto rma = parse({{"LARDER_DIRECTORY_OPS", "rma"}});
  ASSERT_TRUE(rma.ok());
  EXPECT_EQ(rma->directory_ops, DirectoryOps::kRma);
  auto automatic = parse({{"LARDER_DIRECTORY_OPS", "auto"}});
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(automatic->directory_ops, DirectoryOps::kAuto);
}

TEST(ConfigTest, RemoteReadsDefaultToAutoAndAcceptEachMode) {
  auto none = parse({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->remote_reads, RemoteReads::kAuto);
  auto rma = parse({{"LARDER_REMOTE_READS", "rma"}});
  ASSERT_TRUE(rma.ok());
  EXPECT_EQ(rma->remote_reads, RemoteReads::kRma);
  EXPECT_EQ(rma->directory_ops, DirectoryOps::kAuto);  // the two settings are independent
  auto messages = parse({{"LARDER_REMOTE_READS", "messages"}});
  ASSERT_TRUE(messages.ok());
  EXPECT_EQ(messages->remote_reads, RemoteReads::kMessages);
  auto bad = parse({{"LARDER_REMOTE_READS", "get"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().to_string().find("LARDER_REMOTE_READS"), std::string::npos);
  EXPECT_NE(bad.status().to_string().find("auto, rma or messages"), std::string::npos);
}

TEST(ConfigTest, DisableIsExplicitNotJustSet) {
  // DYAD's switches are on when set to 0; ours mean what they say.
  auto off = parse({{"LARDER_ENABLE", "0"}});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->enabled);
  auto on = parse({{"LARDER_ENABLE", "1"}});
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(on->enabled);
}

TEST(ConfigTest, KeepNamesTheAllocationOrTheUsersStore) {
  auto none = parse({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->keep, "") << "auto keeps nothing outside an allocation";
  auto slurm = parse({{"SLURM_JOB_ID", "4242"}, {"PBS_JOBID", "7.server"}});
  ASSERT_TRUE(slurm.ok());
  EXPECT_EQ(slurm->keep, "alloc-4242") << "the first scheduler variable that is set";
  auto pbs = parse({{"PBS_JOBID", "17/x y.server"}});
  ASSERT_TRUE(pbs.ok());
  EXPECT_EQ(pbs->keep, "alloc-17_x_y.server") << "characters a file name should not hold become _";
  auto off = parse({{"SLURM_JOB_ID", "4242"}, {"LARDER_KEEP", "off"}});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->keep, "");
  auto named = parse({{"LARDER_KEEP", "imagenet-v2"}});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->keep, "name-imagenet-v2");
  auto ttl = parse({{"LARDER_KEEP_TTL", "600"}, {"LARDER_VERIFY", "off"}});
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(ttl->keep_ttl.count(), 600);
  EXPECT_FALSE(ttl->verify);
  EXPECT_TRUE(none->verify) << "every chunk is checked by default";
}

struct BadCase {
  const char* var;
  const char* value;
  const char* accepted;  // a phrase the message must contain
};

class ConfigRejectsTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigRejectsTest, NamesTheVariableAndWhatItAccepts) {
  const BadCase& b = GetParam();
  auto c = parse({{b.var, b.value}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kInvalidArgument);
  const std::string& msg = c.status().message();
  EXPECT_NE(msg.find(b.var), std::string::npos) << msg;
  EXPECT_NE(msg.find(b.value), std::string::npos) << msg;
  EXPECT_NE(msg.find(b.accepted), std::string::npos) << msg;
}

// A prefix on a node-local file system (here tmpfs: /dev/shm) is left to it by default, and
// served with LARDER_LOCAL_FS=cache; a missing directory and a produce directory stay managed.
TEST(ConfigTest, NodeLocalPrefixesAreLeftToTheirFileSystemUnlessCached) {
  const std::string dir = "/dev/shm/larder-config-test-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const std::string made = dir + "/made";
  ASSERT_EQ(::mkdir(made.c_str(), 0700), 0);
  const std::string missing = "/nonexistent-larder-prefix/data";
  auto c = parse({{"LARDER_PREFIX", dir + ":" + missing}, {"LARDER_PRODUCE", made}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->local_fs, LocalFs::kBypass);
  c->leave_node_local_prefixes();
  EXPECT_EQ(c->local_prefixes, std::vector<std::string>{dir + " (tmpfs)"});
  EXPECT_FALSE(c->lexically_managed(dir + "/x"));
  EXPECT_TRUE(c->lexically_managed(missing + "/x"));
  EXPECT_TRUE(c->lexically_managed(made + "/x"));
  EXPECT_FALSE(c->any_path());
  // Every prefix local: nothing is managed, and the C API does not take every path instead.
  auto only = parse({{"LARDER_PREFIX", dir}});
  ASSERT_TRUE(only.ok());
  only->leave_node_local_prefixes();
  EXPECT_TRUE(only->prefixes.empty());
  EXPECT_FALSE(only->any_path());
  auto cached = parse({{"LARDER_PREFIX", dir}, {"LARDER_LOCAL_FS", "cache"}});
  ASSERT_TRUE(cached.ok());
  cached->leave_node_local_prefixes();
  EXPECT_TRUE(cached->local_prefixes.empty());
  EXPECT_TRUE(cached->lexically_managed(dir + "/x"));
  ::rmdir(made.c_str());
  ::rmdir(dir.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    BadValues, ConfigRejectsTest,
    ::testing::Values(BadCase{"LARDER_PREFIX", "relative/dir", "absolute directory paths"},
                      BadCase{"LARDER_MEM", "12X", "K, M, G or T"},
                      BadCase{"LARDER_MEM", "-5", "K, M, G or T"},
                      BadCase{"LARDER_MEM", "99999999999T", "K, M, G or T"},
                      BadCase{"LARDER_DISK", "lots", "K, M, G or T"},
                      BadCase{"LARDER_KEEP", "../etc", "auto (keep for the allocation), off"},
                      BadCase{"LARDER_KEEP", "alloc-7", "not starting with '.' or alloc-"},
                      BadCase{"LARDER_KEEP_TTL", "0", "seconds, 1 to 31536000"},
                      BadCase{"LARDER_VERIFY", "maybe", "on or off"},
                      BadCase{"LARDER_LOCAL_FS", "skip", "bypass or cache"},
                      BadCase{"LARDER_CHUNK", "1000", "multiple of 4K"},
                      BadCase{"LARDER_CHUNK", "2G", "between 4K and 1G"},
                      BadCase{"LARDER_CHUNK", "0", "multiple of 4K"},
                      BadCase{"LARDER_DIR", "scratch", "absolute directory path"},
                      BadCase{"LARDER_TRANSPORT", "tcp", "ucx or mpi"},
                      BadCase{"LARDER_DIRECTORY_OPS", "rpc", "auto, rma or messages"},
                      BadCase{"LARDER_LOG", "verbose", "off, error, warn, info, debug or trace"},
                      BadCase{"LARDER_NODE_SIZE", "-1", "positive rank count"},
                      BadCase{"LARDER_NODE_SIZE", "two", "positive rank count"},
                      BadCase{"LARDER_DIR_SLOTS", "8", "between 64 and"},
                      BadCase{"LARDER_DIR_ENTRIES", "63", "between 64 and 4294967296"},
                      BadCase{"LARDER_DIR_ENTRIES", "1e6", "between 64 and 4294967296"},
                      BadCase{"LARDER_TIMEOUT", "0", "seconds"},
                      BadCase{"LARDER_REVALIDATE", "soon", "0 or off (never)"},
                      BadCase{"LARDER_REVALIDATE", "90000", "to 86400"},
                      BadCase{"LARDER_FANOUT", "0", "from 1 to 1024"},
                      BadCase{"LARDER_LIST_AHEAD", "-3", "from 0 (off)"},
                      BadCase{"LARDER_LIST_AHEAD_DIRS", "65", "from 0 (in the listing call) to 64"},
                      BadCase{"LARDER_LIST_AHEAD_DIRS", "many", "to 64 (directories at once)"},
                      BadCase{"LARDER_LOAD_PARALLEL", "0", "from 1 (one load at a time) to 64"},
                      BadCase{"LARDER_LOAD_PARALLEL", "65", "from 1 (one load at a time) to 64"},
                      BadCase{"LARDER_PREFETCH_AHEAD", "-1", "from 0 (no prefetch of schedules)"},
                      BadCase{"LARDER_PREFETCH_AHEAD", "2000000000", "to 1073741824"},
                      BadCase{"LARDER_PREFETCH_STAGE", "lots",
                              "0 (a schedule stops at the budget)"},
                      BadCase{"LARDER_SMALL_FILE", "big", "K, M, G or T"},
                      BadCase{"LARDER_NODE_SLOTS", "1", "between 64 and"},
                      BadCase{"LARDER_SHM_DIR", "shm", "absolute directory path"},
                      BadCase{"LARDER_ENABLE", "maybe", "1, 0, true, false"},
                      BadCase{"LARDER_PRODUCE", "out", "absolute directory paths"},
                      BadCase{"LARDER_PRODUCE_MODE", "lazy", "through or local"},
                      BadCase{"LARDER_GROUP", "1", "nodes per group from 2"},
                      BadCase{"LARDER_GROUP", "some", "auto, off"}));

TEST(ConfigTest, LexicalManagementIsByWholeComponents) {
  auto c = parse({{"LARDER_PREFIX", "/lus/data"}});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->lexically_managed("/lus/data"));
  EXPECT_TRUE(c->lexically_managed("/lus/data/a/b"));
  EXPECT_FALSE(c->lexically_managed("/lus/database"));
  EXPECT_FALSE(c->lexically_managed("/lus"));
  EXPECT_FALSE(c->lexically_managed("/usr/lib/x"));
}

TEST(ConfigTest, NodeGroupsAreAboutTheSquareRootOfTheNodesFrom64NodesUp) {
  auto c = parse({});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->group_size(8), 0u);
  EXPECT_EQ(c->group_size(63), 0u);
  EXPECT_EQ(c->group_size(64), 8u);
  EXPECT_EQ(c->group_size(8192), 91u);
  auto two = parse({{"LARDER_GROUP", "2"}});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->group_size(8), 2u);
  EXPECT_EQ(two->group_size(2), 0u);  // one group: no groups
  auto off = parse({{"LARDER_GROUP", "off"}});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->group_size(8192), 0u);
}

TEST(ConfigTest, ProduceDirectoriesAreManagedAndKnownAsProduced) {
  auto c = parse({{"LARDER_PREFIX", "/lus/data"},
                  {"LARDER_PRODUCE", "/lus/out//run/:/lus/ckpt"},
                  {"LARDER_PRODUCE_MODE", "local"}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->produce_mode, ProduceMode::kLocal);
  EXPECT_TRUE(c->lexically_managed("/lus/out/run/a.npy"));  // readers are served
  EXPECT_TRUE(c->produced("/lus/out/run/a.npy"));
  EXPECT_TRUE(c->produced("/lus/ckpt/x/y.pt"));
  EXPECT_FALSE(c->produced("/lus/data/a.npy"));
  EXPECT_FALSE(c->produced("/lus/out/runs/a.npy"));
  auto through = parse({{"LARDER_PRODUCE", "/lus/out"}});
  ASSERT_TRUE(through.ok());
  EXPECT_EQ(through->produce_mode, ProduceMode::kThrough);  // the default
}

}  // namespace
}  // namespace larder
