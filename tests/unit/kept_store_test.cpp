#include "runtime/tier/kept_store.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "tests/support/temp_dir.hpp"

namespace larder {
namespace {

using namespace std::chrono_literals;

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

// A store on a scratch "node": the per-user base directories JobDir would make.
struct Node {
  testing::TempDir shm{"kept-shm"};
  testing::TempDir disk{"kept-disk"};
  KeptPlace place;

  explicit Node(const std::string& name = "name-test") {
    place.shm_base = shm.path() + "/larder-" + std::to_string(::geteuid());
    place.disk_base = disk.path() + "/larder-" + std::to_string(::geteuid());
    ::mkdir(place.shm_base.c_str(), 0700);
    ::mkdir(place.disk_base.c_str(), 0700);
    place.name = name;
    place.node = "host";
  }

  // A file of `size` bytes (pattern `seed`) where a job would have one, to be kept.
  std::string arena(const std::string& job, const std::string& name, std::size_t size, int seed) {
    const std::string dir = place.shm_base + "/" + job;
    ::mkdir(dir.c_str(), 0700);
    const std::string path = dir + "/" + name;
    std::ofstream out(path, std::ios::binary);
    for (std::size_t i = 0; i < size; ++i) out.put(static_cast<char>((i * 7 + seed) % 251));
    out.close();
    ::chmod(path.c_str(), 0600);
    return path;
  }

  // Keeps one step of one rank: `keys` chunks of `length` bytes at consecutive offsets of one
  // arena file, then marks the step complete.
  void keep_step(const std::string& job, std::uint64_t first_key, int keys, std::uint32_t length,
                 std::uint32_t flags = 0, bool complete = true, std::uint64_t stride = 1) {
    const std::string file = arena(job, "arena-0.mem", std::size_t{length} * keys, job[0]);
    std::vector<KeptRecord> records;
    for (int i = 0; i < keys; ++i) {
      KeptRecord r;
      r.word = first_key + stride * static_cast<std::uint64_t>(i);
      r.check = 7;
      r.version = 99;
      r.hash = 1234;
      r.offset = std::uint64_t{length} * static_cast<std::uint64_t>(i);
      r.length = length;
      r.file = 0;
      r.flags = flags;
      records.push_back(r);
    }
    const std::string files[] = {file};
    const bool disk[] = {false};
    auto kept = KeptStore::keep_rank(place, job, 0, files, disk, records);
    ASSERT_TRUE(kept.ok()) << kept.status().to_string();
    if (complete) {
      ASSERT_TRUE(KeptStore::complete_step(place, job).ok());
    }
  }

  Result<KeptPrepared> prepare(const std::string& job, std::uint64_t mem = 1ull << 30,
                               std::uint64_t disk = 1ull << 30) {
    return KeptStore::prepare(place, job, mem, disk, 3600s);
  }
};

// A file's bytes.
std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Key key_of(std::uint64_t word) {
  return Key{word, 7, 0};
}

TEST(KeptStoreTest, WhatAStepKeptIsFoundByTheNextStep) {
  Node node;
  node.keep_step("1111111111111111", 100, 3, 4096);
  auto prepared = node.prepare("2222222222222222");
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  EXPECT_EQ(prepared->chunks, 3u);
  EXPECT_GE(prepared->mem_bytes, 3u * 4096);
  auto kept = KeptStore::open(node.place, "2222222222222222");
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  const KeptRecord* r = (*kept)->find(key_of(101));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->offset, 4096u);
  EXPECT_EQ(r->version, 99u);
  EXPECT_EQ(r->hash, 1234u);
  EXPECT_TRUE(exists((*kept)->file(r->file).path));
  EXPECT_EQ((*kept)->find(key_of(103)), nullptr);
  EXPECT_EQ((*kept)->find(Key{101, 8, 0}), nullptr) << "the check word must match too";
  KeptStore::remove_table(node.place, "2222222222222222");
}

TEST(KeptStoreTest, KeysWhoseSlotsCollideAreEachFoundOnce) {
  Node node;
  // Words equal in their low 32 bits: one probe chain through the table.
  constexpr std::uint64_t kStride = std::uint64_t{1} << 32;
  node.keep_step("1111111111111111", kStride, 300, 512, 0, true, kStride);
  std::this_thread::sleep_for(20ms);  // the steps' completion times order them (ns mtimes)
  node.keep_step("3333333333333333", kStride * 200, 200, 512, 0, true, kStride);  // 100 again
  auto prepared = node.prepare("2222222222222222");
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  EXPECT_EQ(prepared->chunks, 399u);
  auto kept = KeptStore::open(node.place, "2222222222222222");
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  EXPECT_EQ((*kept)->records().size(), 399u);
  std::set<std::uint64_t> words;
  for (const KeptRecord& r : (*kept)->records()) words.insert(r.word);
  EXPECT_EQ(words.size(), 399u) << "each key once";
  for (std::uint64_t i = 1; i < 400; ++i) {
    const KeptRecord* r = (*kept)->find(key_of(kStride * i));
    ASSERT_NE(r, nullptr) << i;
    // Keys 200-299 are in both steps: the newer step's file holds them.
    const bool newer = i >= 200;
    EXPECT_EQ(r->offset, 512 * (newer ? i - 200 : i - 1)) << i;
  }
  EXPECT_EQ((*kept)->find(key_of(kStride * 400)), nullptr);
  KeptStore::remove_table(node.place, "2222222222222222");
}

TEST(KeptStoreTest, AStepWhoseWriterDidNotFinishIsDropped) {
  Node node;
  node.keep_step("1111111111111111", 100, 2, 4096, 0, /*complete=*/false);
  auto prepared = node.prepare("2222222222222222");
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->chunks, 0u);
  EXPECT_GT(prepared->unfinished_bytes, 0u);
  EXPECT_FALSE(exists(node.place.shm_root() + "/1111111111111111"));
}

TEST(KeptStoreTest, AStepWithATamperedIndexIsDropped) {
  Node node;
  node.keep_step("1111111111111111", 100, 2, 4096);
  const std::string index = node.place.shm_root() + "/1111111111111111/index-0";
  {
    std::fstream f(index, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  auto prepared = node.prepare("2222222222222222");
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->chunks, 0u);
  EXPECT_GT(prepared->unfinished_bytes, 0u);
}

TEST(KeptStoreTest, TheNewestStepWinsAndAnOlderOriginFlagStays) {
  Node node;
  node.keep_step("1111111111111111", 100, 2, 4096, KeptRecord::kOrigin);
  std::this_thread::sleep_for(20ms);  // the steps' completion times order them (ns mtimes)
  node.keep_step("3333333333333333", 101, 2, 8192, 0);  // key 101 again, not as its origin
  auto prepared = node.prepare("2222222222222222");
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->chunks, 3u);
  auto kept = KeptStore::open(node.place, "2222222222222222");
  ASSERT_TRUE(kept.ok());
  const KeptRecord* r = (*kept)->find(key_of(101));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->length, 8192u) << "the newer step's copy";
  EXPECT_NE(r->flags & KeptRecord::kOrigin, 0u) << "this node was its origin in the older step";
  KeptStore::remove_table(node.place, "2222222222222222");
}

TEST(KeptStoreTest, AnOlderStandInFlagStays) {
  Node node;
  node.keep_step("1111111111111111", 100, 2, 4096, KeptRecord::kStandIn);
  std::this_thread::sleep_for(20ms);  // the steps' completion times order them (ns mtimes)
  node.keep_step("3333333333333333", 101, 2, 8192, 0);  // key 101 again, a plain copy
  auto prepared = node.prepare("2222222222222222");
  ASSERT_TRUE(prepared.ok());
  auto kept = KeptStore::open(node.place, "2222222222222222");
  ASSERT_TRUE(kept.ok());
  const KeptRecord* r = (*kept)->find(key_of(101));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->length, 8192u) << "the newer step's copy";
  EXPECT_NE(r->flags & KeptRecord::kStandIn, 0u)
      << "this node copied it from its origin in the older step: it may still stand in";
  EXPECT_EQ(r->flags & KeptRecord::kOrigin, 0u);
  KeptStore::remove_table(node.place, "2222222222222222");
}

KeptProduced produced_file(const std::string& path, char answer) {
  return KeptProduced{path, path + ".canonical", std::vector<std::byte>(40, std::byte(answer))};
}

// Keeps one rank's step holding produced files (one chunk record, so the step has an index),
// and marks the step complete unless `complete` is false (its leader did not finish).
void keep_produced(Node& node, const std::string& job, std::span<const KeptProduced> produced,
                   bool complete = true) {
  const std::string file = node.arena(job, "seg-0-1", 4096, 3);
  KeptRecord r;
  r.word = 500;
  r.check = 7;
  r.version = 99;
  r.length = 4096;
  const std::string files[] = {file};
  const bool disk[] = {false};
  const KeptRecord records[] = {r};
  ASSERT_TRUE(KeptStore::keep_rank(node.place, job, 0, files, disk, records, produced).ok());
  if (complete) {
    ASSERT_TRUE(KeptStore::complete_step(node.place, job).ok());
  }
}

TEST(KeptStoreTest, ProducedFilesAreListedNewestStepFirstOncePerPath) {
  Node node;
  const KeptProduced older[] = {produced_file("/pfs/out/a", 'a'), produced_file("/pfs/out/b", 'b')};
  keep_produced(node, "1111111111111111", older);
  std::this_thread::sleep_for(20ms);  // the steps' completion times order them (ns mtimes)
  const KeptProduced newer[] = {produced_file("/pfs/out/a", 'A')};
  keep_produced(node, "3333333333333333", newer);
  const std::vector<KeptProduced> found = KeptStore::produced(node.place);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].path, "/pfs/out/a");
  EXPECT_EQ(found[0].canonical, "/pfs/out/a.canonical");
  EXPECT_EQ(found[0].answer, std::vector<std::byte>(40, std::byte('A'))) << "the newer step's";
  EXPECT_EQ(found[1].path, "/pfs/out/b");
}

TEST(KeptStoreTest, ATamperedProducedListOrAnUnfinishedStepIsNotRead) {
  Node node;
  const KeptProduced one[] = {produced_file("/pfs/out/a", 'a')};
  keep_produced(node, "1111111111111111", one);
  {
    std::fstream f(node.place.shm_root() + "/1111111111111111/produced-0",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  EXPECT_TRUE(KeptStore::produced(node.place).empty());
  // A step whose leader did not mark it complete: its list is not read either.
  keep_produced(node, "3333333333333333", one, /*complete=*/false);
  EXPECT_TRUE(KeptStore::produced(node.place).empty());
}

// Keeps one rank's stat answers and listings: `answers[i]` under key `first_key + i`.
void keep_answers(Node& node, const std::string& job, std::uint64_t first_key,
                  const std::vector<std::vector<std::byte>>& answers) {
  std::vector<std::byte> bytes;
  std::vector<KeptRecord> records;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    KeptRecord r;
    r.word = first_key + i;
    r.check = 7;
    r.hash = 4321;
    r.offset = bytes.size();
    r.length = static_cast<std::uint32_t>(answers[i].size());
    r.flags = KeptRecord::kOrigin;  // not taken: an answer is never a chunk's origin
    bytes.insert(bytes.end(), answers[i].begin(), answers[i].end());
    records.push_back(r);
  }
  ASSERT_TRUE(KeptStore::keep_rank(node.place, job, 1, {}, {}, {}, {}, bytes, records).ok());
  ASSERT_TRUE(KeptStore::complete_step(node.place, job).ok());
}

TEST(KeptStoreTest, StatAnswersAndListingsAreRecordsOfTheSameTableNewestStepFirst) {
  Node node;
  const std::vector<std::byte> a(112, std::byte{'a'});
  std::vector<std::byte> listing(112 + 300, std::byte{'l'});
  node.keep_step("1111111111111111", 100, 2, 4096, 0, /*complete=*/false);  // beside them
  keep_answers(node, "1111111111111111", 500, {a, listing});
  std::this_thread::sleep_for(20ms);  // the steps' completion times order them (ns mtimes)
  const std::vector<std::byte> newer(112, std::byte{'A'});
  keep_answers(node, "3333333333333333", 500, {newer});
  auto prepared = node.prepare("4444444444444444");
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  EXPECT_EQ(prepared->chunks, 4u) << "two chunks, two answers (the older 500 superseded)";
  auto kept = KeptStore::open(node.place, "4444444444444444");
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  std::vector<std::byte> got;
  const KeptRecord* r = (*kept)->find(key_of(500));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->flags, KeptRecord::kAnswer) << "flagged as an answer, never an origin";
  EXPECT_EQ(r->version, 0u);
  EXPECT_EQ(r->hash, 4321u);
  ASSERT_TRUE((*kept)->read_answer(*r, &got));
  EXPECT_EQ(got, newer) << "the newer step's answer";
  EXPECT_TRUE((*kept)->file(r->file).answers);
  r = (*kept)->find(key_of(501));
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE((*kept)->read_answer(*r, &got));
  EXPECT_EQ(got, listing) << "a listing: its payload and records";
  const KeptRecord* chunk = (*kept)->find(key_of(100));
  ASSERT_NE(chunk, nullptr);
  EXPECT_FALSE((*kept)->file(chunk->file).answers);
  EXPECT_FALSE((*kept)->read_answer(*chunk, &got)) << "a chunk is not read as an answer";
  KeptStore::remove_table(node.place, "4444444444444444");
}

TEST(KeptStoreTest, AnAnswersFileCutShortIsNotReadPastItsEnd) {
  Node node;
  keep_answers(node, "1111111111111111", 500, {std::vector<std::byte>(112, std::byte{'a'})});
  ASSERT_EQ(::truncate((node.place.shm_root() + "/1111111111111111/answers-1").c_str(), 50), 0);
  ASSERT_TRUE(node.prepare("4444444444444444").ok());
  auto kept = KeptStore::open(node.place, "4444444444444444");
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  const KeptRecord* r = (*kept)->find(key_of(500));
  ASSERT_NE(r, nullptr);
  std::vector<std::byte> got;
  EXPECT_FALSE((*kept)->read_answer(*r, &got));
  KeptStore::remove_table(node.place, "4444444444444444");
}

// Two steps of 4 chunks of 64 KiB (keys 100.., 200..), the first's file used more recently.
void keep_two_steps_first_used_last(Node& node) {
  node.keep_step("1111111111111111", 100, 4, 65536);
  node.keep_step("3333333333333333", 200, 4, 65536);
  std::this_thread::sleep_for(20ms);  // file times order the uses (ns mtimes)
  KeptStore::touch(node.place.shm_root() + "/1111111111111111/arena-0.mem");
}

TEST(KeptStoreTest, ASmallerBudgetTrimsTheLeastRecentlyUsedFirst) {
  Node node;
  keep_two_steps_first_used_last(node);
  auto prepared = node.prepare("2222222222222222", /*mem=*/300 * 1024, /*disk=*/0);
  ASSERT_TRUE(prepared.ok());
  EXPECT_GT(prepared->evicted_bytes, 0u);
  EXPECT_EQ(prepared->demoted_bytes, 0u) << "no room on the disk tier";
  EXPECT_LE(prepared->mem_bytes, 300u * 1024);
  auto kept = KeptStore::open(node.place, "2222222222222222");
  ASSERT_TRUE(kept.ok());
  EXPECT_NE((*kept)->find(key_of(100)), nullptr) << "the recently used file stays";
  EXPECT_EQ((*kept)->find(key_of(200)), nullptr) << "the least recently used file went";
  KeptStore::remove_table(node.place, "2222222222222222");
}

TEST(KeptStoreTest, OverTheMemoryBudgetTheLeastRecentlyUsedGoesToTheDiskTierFirst) {
  Node node;
  keep_two_steps_first_used_last(node);
  const std::string mem_copy = node.place.shm_root() + "/3333333333333333/arena-0.mem";
  const std::string bytes = contents(mem_copy);
  auto prepared = node.prepare("2222222222222222", /*mem=*/300 * 1024);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->evicted_bytes, 0u) << "nothing dropped: the disk tier had room";
  EXPECT_GE(prepared->demoted_bytes, 4u * 65536);
  EXPECT_LE(prepared->mem_bytes, 300u * 1024);
  EXPECT_GE(prepared->disk_bytes, 4u * 65536);
  EXPECT_FALSE(exists(mem_copy)) << "the memory copy went";
  // A later step finds it on the disk tier, as the rewritten index says, with the same bytes.
  KeptStore::remove_table(node.place, "2222222222222222");
  ASSERT_TRUE(node.prepare("4444444444444444", /*mem=*/300 * 1024).ok());
  auto kept = KeptStore::open(node.place, "4444444444444444");
  ASSERT_TRUE(kept.ok());
  const KeptRecord* r = (*kept)->find(key_of(201));
  ASSERT_NE(r, nullptr);
  const KeptStore::File& file = (*kept)->file(r->file);
  EXPECT_TRUE(file.disk);
  EXPECT_EQ(file.path.rfind(node.place.disk_root(), 0), 0u) << file.path;
  const std::string got = contents(file.path);
  EXPECT_EQ(got, bytes);
  ASSERT_NE((*kept)->find(key_of(100)), nullptr);
  EXPECT_FALSE((*kept)->file((*kept)->find(key_of(100))->file).disk) << "the recent one stays";
  KeptStore::remove_table(node.place, "4444444444444444");
}

// During a step: a memory file the step evicts for room goes to the disk tier (copied, its
// index's flag set, the memory copy removed), and the next step finds it there with its bytes.
// While another step holds the store's lock it is not moved and stays as it was.
TEST(KeptStoreTest, AMemoryFileEvictedDuringAStepGoesToTheDiskTierForTheNext) {
  Node node;
  node.keep_step("1111111111111111", 100, 4, 65536);
  const std::string mem_copy = node.place.shm_root() + "/1111111111111111/arena-0.mem";
  const std::string bytes = contents(mem_copy);
  ASSERT_TRUE(node.prepare("2222222222222222").ok());
  auto kept = KeptStore::open(node.place, "2222222222222222");
  ASSERT_TRUE(kept.ok());
  const KeptRecord* r = (*kept)->find(key_of(101));
  ASSERT_NE(r, nullptr);
  const KeptStore::File& file = (*kept)->file(r->file);
  ASSERT_FALSE(file.disk);
  {
    // Another step preparing: not moved, not waited for.
    const std::string lock_path = node.place.shm_base + "/keep-" + node.place.name + ".lock";
    const int held = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::flock(held, LOCK_EX), 0);
    EXPECT_FALSE((*kept)->demote(file).ok());
    ::close(held);
    EXPECT_TRUE(exists(mem_copy)) << "left as it was";
  }
  auto moved = (*kept)->demote(file);
  ASSERT_TRUE(moved.ok()) << moved.status().to_string();
  EXPECT_GE(*moved, 4u * 65536);
  EXPECT_FALSE(exists(mem_copy)) << "the memory copy went";
  EXPECT_FALSE((*kept)->demote(file).ok()) << "once only";
  kept->reset();
  KeptStore::remove_table(node.place, "2222222222222222");
  auto prepared = node.prepare("3333333333333333");
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->chunks, 4u) << "the index was rewritten whole";
  EXPECT_GE(prepared->disk_bytes, 4u * 65536);
  auto next = KeptStore::open(node.place, "3333333333333333");
  ASSERT_TRUE(next.ok());
  const KeptRecord* again = (*next)->find(key_of(103));
  ASSERT_NE(again, nullptr);
  const KeptStore::File& on_disk = (*next)->file(again->file);
  EXPECT_TRUE(on_disk.disk);
  const std::string got = contents(on_disk.path);
  EXPECT_EQ(got, bytes);
  KeptStore::remove_table(node.place, "3333333333333333");
}

TEST(KeptStoreTest, AnAllocationsFirstStepRemovesOtherAllocationsStores) {
  Node node("alloc-1");
  node.keep_step("1111111111111111", 100, 1, 4096);
  KeptPlace next = node.place;
  next.name = "alloc-2";
  KeptPlace named = node.place;
  named.name = "name-mine";
  ASSERT_TRUE(KeptStore::prepare(named, "4444444444444444", 1 << 20, 0, 3600s).ok());
  KeptStore::remove_table(named, "4444444444444444");
  auto prepared = KeptStore::prepare(next, "2222222222222222", 1 << 20, 0, 3600s);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->stores_removed, 1);
  EXPECT_FALSE(exists(node.place.shm_base + "/keep-alloc-1"));
  EXPECT_TRUE(exists(node.place.shm_base + "/keep-name-mine")) << "a named store stays";
  KeptStore::remove_table(next, "2222222222222222");
}

TEST(KeptStoreTest, AStoreInUseIsNotRemoved) {
  Node node("alloc-1");
  node.keep_step("1111111111111111", 100, 1, 4096);
  ASSERT_TRUE(node.prepare("5555555555555555").ok());
  auto in_use = KeptStore::open(node.place, "5555555555555555");  // a running step holds it
  ASSERT_TRUE(in_use.ok());
  KeptPlace next = node.place;
  next.name = "alloc-2";
  auto prepared = KeptStore::prepare(next, "2222222222222222", 1 << 20, 0, 3600s);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->stores_removed, 0);
  EXPECT_TRUE(exists(node.place.shm_base + "/keep-alloc-1"));
}

TEST(KeptStoreTest, AJobThatKeepsNothingRemovesStoresPastTheirTtl) {
  Node node;
  node.keep_step("1111111111111111", 100, 1, 4096);
  KeptPlace held = node.place;
  held.name = "name-held";
  ASSERT_TRUE(KeptStore::prepare(held, "5555555555555555", 1 << 20, 0, 3600s).ok());
  auto in_use = KeptStore::open(held, "5555555555555555");
  ASSERT_TRUE(in_use.ok());
  // Both stores were last used long ago.
  const struct timespec old[2] = {{1000, 0}, {1000, 0}};
  for (const char* name : {"/keep-name-test", "/keep-name-held"}) {
    ASSERT_EQ(::utimensat(AT_FDCWD, (node.place.shm_base + name).c_str(), old, 0), 0);
  }
  EXPECT_EQ(KeptStore::sweep(node.place.shm_base, node.place.disk_base, 3600s), 1);
  EXPECT_FALSE(exists(node.place.shm_base + "/keep-name-test")) << "unused past its TTL";
  EXPECT_TRUE(exists(node.place.shm_base + "/keep-name-held")) << "a running step uses it";
  KeptStore::remove_table(held, "5555555555555555");
}

TEST(KeptStoreTest, ASymlinkOrAnotherUsersDirectoryIsNeverRead) {
  Node node;
  node.keep_step("1111111111111111", 100, 1, 4096);
  const std::string root = node.place.shm_root();
  // A symlink where a step would be, pointing at a complete step elsewhere.
  ASSERT_EQ(::symlink((root + "/1111111111111111").c_str(), (root + "/6666666666666666").c_str()),
            0);
  // A step directory open to others.
  const std::string open_dir = root + "/7777777777777777";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0755), 0);
  std::ofstream(open_dir + "/complete").close();
  auto prepared = node.prepare("2222222222222222");
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->chunks, 1u) << "only the real step's chunk";
  EXPECT_TRUE(exists(root + "/6666666666666666")) << "the link is neither followed nor removed";
  EXPECT_TRUE(exists(open_dir + "/complete"));
  KeptStore::remove_table(node.place, "2222222222222222");
}

TEST(KeptStoreTest, AStoreDirectoryOfAnotherUserStopsKeeping) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant another user's directory";
  Node node;
  const std::string store = node.place.shm_base + "/keep-" + node.place.name;
  ASSERT_EQ(::mkdir(store.c_str(), 0700), 0);
  ASSERT_EQ(::chown(store.c_str(), 65534, 65534), 0);
  auto prepared = node.prepare("2222222222222222");
  EXPECT_FALSE(prepared.ok()) << "a planted store is not used";
}

}  // namespace
}  // namespace larder
