// Uses the installed C++ API (larder.hpp) the same way as consumer.c. Usage: consumer_cxx FILE.
#include <larder/larder.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::ifstream in(argv[1], std::ios::binary);
  const std::vector<char> direct((std::istreambuf_iterator<char>(in)), {});
  larder::Session session(MPI_COMM_NULL);
  std::vector<std::byte> cached(direct.size());
  {
    larder::File f(argv[1]);
    f.read_at(cached, 0);
  }
  const bool same = std::equal(direct.begin(), direct.end(), cached.begin(),
                               [](char a, std::byte b) { return a == static_cast<char>(b); });
  session.finalize();
  std::printf("%s %zu\n", same ? "ok" : "differ", direct.size());
  return same ? 0 : 1;
}
