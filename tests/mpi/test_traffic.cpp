// SPDX-License-Identifier: Apache-2.0
// What the rank-order sums (mpi/buckets.hpp) post to MPI, counted per rank
// by intercepting the calls they make through MPI's profiling interface
// (this file defines MPI_Ialltoallv, MPI_Iallgatherv, MPI_Isend and
// MPI_Ibcast, which count and call PMPI_…; hence an executable of its
// own), against the step model's formulas (plan/algorithms.hpp) read on a
// link of one value per second and no latency (their seconds are then the
// values sent) and on a link of no transfer time and one second of latency
// (their seconds are the messages): the flat sum posts 2 (p - 1)/p n values
// in 2 (p - 1) messages per rank, and each phase of the two-level sum what
// its term in the model says; a sharded step's reduce-scatter of the
// gradient and gather of the parameters (MPI_Allgatherv, counted too) post
// the flat sum's values and messages together.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <gradsum/plan/algorithms.hpp>

#include <mpi.h>

#include <cmath>
#include <cstdint>

using namespace gradsum_test;

namespace traffic_test {

// Values and messages this rank posted, per call.
struct Posted {
  std::int64_t exchanged = 0, exchanges = 0;  // MPI_Ialltoallv, to the other ranks
  std::int64_t gathered = 0, gathers = 0;     // MPI_Iallgatherv, to the other ranks
  std::int64_t sent = 0, sends = 0;           // MPI_Isend
  std::int64_t broadcast = 0, broadcasts = 0; // MPI_Ibcast, as the root
  std::int64_t blocks = 0, block_gathers = 0;  // MPI_Allgatherv (blocking), to the other ranks
};

Posted& posted() {
  static Posted counts;
  return counts;
}

int rank_in(MPI_Comm comm) {
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

// Counts a gather's values to the other ranks (this rank's block, once to
// each) and its messages.
void count_gather(const void* sendbuf, int sendcount, const int recvcounts[], MPI_Comm comm,
                  std::int64_t& values, std::int64_t& messages) {
  int size = 1;
  PMPI_Comm_size(comm, &size);
  const int mine = sendbuf == MPI_IN_PLACE ? recvcounts[rank_in(comm)] : sendcount;
  if (mine > 0) {
    values += std::int64_t(mine) * (size - 1);
    messages += size - 1;
  }
}

}  // namespace traffic_test

extern "C" {

int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request* request) {
  int size = 1;
  PMPI_Comm_size(comm, &size);
  const int me = traffic_test::rank_in(comm);
  for (int k = 0; k < size; ++k)
    if (k != me && sendcounts[k] > 0) {
      traffic_test::posted().exchanged += sendcounts[k];
      ++traffic_test::posted().exchanges;
    }
  return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                         recvtype, comm, request);
}

int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request* request) {
  traffic_test::count_gather(sendbuf, sendcount, recvcounts, comm, traffic_test::posted().gathered,
                             traffic_test::posted().gathers);
  return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                          comm, request);
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  traffic_test::count_gather(sendbuf, sendcount, recvcounts, comm, traffic_test::posted().blocks,
                             traffic_test::posted().block_gathers);
  return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                         comm);
}

int MPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  traffic_test::posted().sent += count;
  ++traffic_test::posted().sends;
  return PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
}

int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request* request) {
  if (traffic_test::rank_in(comm) == root) {
    traffic_test::posted().broadcast += count;
    ++traffic_test::posted().broadcasts;
  }
  return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
}

}  // extern "C"

namespace traffic_test {

// 1,200 values (a multiple of 1 to 4) summed in one bucket as `layout` says.
constexpr int n = 1200;

Posted sum_once(const gradsum::SumLayout& layout) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  gradsum::Allreduce sum(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic,
                         gradsum::Buckets{0, std::size_t(n)}, layout);
  sum.allocate<double, Space::memory_space>(n);
  Kokkos::View<double*, Space::memory_space> x("traffic_test::x", n);
  Kokkos::deep_copy(x, 1.0);
  posted() = Posted{};
  sum.aggregate(Space(), x);
  const Posted counted = posted();
  // The sum itself, so that the counts are of a sum that worked.
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  CHECK(host(0) == double(mpi_size()));
  CHECK(host(n - 1) == double(mpi_size()));
  return counted;
}

// The model's seconds on a link that sends one value per second with no
// latency (values), and on one with no transfer time and 1 s of latency
// (messages).
const gradsum::plan::Network values_link{1.0, 0.0}, messages_link{1e300, 1.0};

}  // namespace traffic_test

using namespace traffic_test;

TEST_CASE("MPI traffic: the flat rank-order sum posts 2(p-1)/p n values in 2(p-1) messages") {
  const int p = mpi_size();
  const Posted counted = sum_once({gradsum::SumAlgorithm::flat, 0});
  const double values = gradsum::plan::reduce_scatter_allgather_seconds(values_link, n, p);
  const double messages = gradsum::plan::reduce_scatter_allgather_seconds(messages_link, n, p);
  CHECK(values == 2.0 * (p - 1) / p * n);
  CHECK(double(counted.exchanged + counted.gathered) == values);
  CHECK(double(counted.exchanges + counted.gathers) == std::round(messages));
  CHECK(counted.exchanged == counted.gathered);  // half each way
  CHECK(counted.sent == 0);
  CHECK(counted.broadcast == 0);
}

TEST_CASE("MPI traffic: each phase of the two-level sum posts what the step model prices") {
  const int p = mpi_size();
  if (p == 1) return;
  for (int per_node : {1, 2}) {
    if (p % per_node != 0) continue;  // full nodes: the model's slices are L
    INFO(p << " ranks on nodes of " << per_node);
    const Posted counted = sum_once({gradsum::SumAlgorithm::two_level, per_node});
    const gradsum::plan::Nodes unit_nodes{per_node, values_link},
        latency_nodes{per_node, messages_link};
    const auto in_values = gradsum::plan::two_level_stages(values_link, unit_nodes, n, p);
    const auto in_messages = gradsum::plan::two_level_stages(messages_link, latency_nodes, n, p);
    const int node = mpi_rank() / per_node, nodes = p / per_node;
    REQUIRE(in_values.nodes == nodes);
    CHECK(double(counted.exchanged) == in_values.exchange);
    CHECK(double(counted.exchanges) == std::round(in_messages.exchange));
    CHECK(double(counted.gathered) == in_values.gather);
    CHECK(double(counted.gathers) == std::round(in_messages.gather));
    // One hop of the chain from every node but the last; the last node
    // broadcasts its sums, one slice per rank.
    CHECK(double(counted.sent) == (node < nodes - 1 ? in_values.hop : 0.0));
    CHECK(double(counted.sends) == (node < nodes - 1 ? std::round(in_messages.hop) : 0.0));
    CHECK(double(counted.broadcast) == (node == nodes - 1 ? in_values.hop : 0.0));
    // Across node boundaries, n / L values per rank each way: one value
    // per element of the bucket.
    if (nodes > 1) CHECK(in_values.hop == double(n) / per_node);
  }
}

TEST_CASE("MPI traffic: a sharded step's reduce-scatter and gather post what the flat sum does") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const int p = mpi_size(), me = mpi_rank();
  gradsum::Allreduce sum(MPI_COMM_WORLD);
  sum.shard_optimizer();
  sum.allocate<double, Space::memory_space>(n);
  CHECK(sum.reduce_scatters() == (p > 1));
  const auto shard = sum.optimizer_shard(n);
  Kokkos::View<double*, Space::memory_space> x("traffic_test::x", n);
  Kokkos::deep_copy(x, double(me + 1));
  posted() = Posted{};
  sum.reduce_scatter_next(n);
  sum.aggregate(Space(), x);
  const Posted scattered = posted();
  // The sums, 1 + 2 + … + p, on this rank's block alone; its own values
  // elsewhere.
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  bool right = true;
  for (std::int64_t j = 0; j < n; ++j)
    right = right && host(j) == (j >= shard.begin && j < shard.end ? p * (p + 1) / 2.0 : me + 1.0);
  CHECK(right);
  // Every rank's block of the parameters gathered to every rank.
  Kokkos::View<double*, Space::memory_space> theta("traffic_test::theta", n);
  Kokkos::deep_copy(Kokkos::subview(theta, Kokkos::make_pair(shard.begin, shard.end)),
                    double(me + 1));
  posted() = Posted{};
  sum.gather_shards(Space(), theta);
  const Posted gathered = posted();
  auto host_theta = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  CHECK(host_theta(0) == 1.0);
  CHECK(host_theta(n - 1) == double(p));
  const double values = gradsum::plan::reduce_scatter_allgather_seconds(values_link, n, p);
  const double messages = gradsum::plan::reduce_scatter_allgather_seconds(messages_link, n, p);
  CHECK(double(scattered.exchanged + gathered.blocks) == values);
  CHECK(double(scattered.exchanges + gathered.block_gathers) == std::round(messages));
  CHECK(scattered.exchanged == gathered.blocks);  // half each way
  CHECK(scattered.gathered == 0);
  CHECK(gathered.exchanged == 0);
}
