// A deterministic discrete-event simulation of one iteration of a case's plans (issue 6): the
// same stream, dependency and matching rules as the executor, with times from a cost model
// instead of a machine. Its CaseResult has the executor's layout, so metrics, reports and
// pictures work on it unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fob/plan.h"
#include "fob/results.h"
#include "fob/workload.h"

namespace fob {

// The most ranks a case may have, in simulation as on the command line (--world).
inline constexpr int kMaxWorld = 1 << 16;

// The latency a transfer pays once and the rate it then flows at, alone on its link.
struct LinkRate {
  double latency_s = 0;
  double bytes_per_s = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Seconds for a gemm, add, copy or softmax task on `rank`.
  virtual double compute_seconds(const Task& t, DType dtype, int rank) const = 0;
  // The same for a task of an overlapping plan that may run beside a transfer
  // (tasks_beside_transfers): on a GPU it runs on the SMs the transfers leave it.
  virtual double compute_seconds_beside_comm(const Task& t, DType dtype, int rank) const {
    return compute_seconds(t, dtype, rank);
  }
  // Seconds for one point-to-point message of `bytes` from one rank to another, alone on its
  // link: latency_seconds + bytes / bytes_per_second.
  virtual double transfer_seconds(int64_t bytes, int from_rank, int to_rank) const = 0;
  // The pieces of transfer_seconds, for messages that share a link. Messages in flight at the
  // same time that leave one rank over the same link class share that rank's egress
  // bandwidth, and those arriving at one rank over one class share its ingress bandwidth.
  virtual double latency_seconds(int from_rank, int to_rank) const = 0;
  virtual double bytes_per_second(int from_rank, int to_rank) const = 0;
  // A transfer's latency and rate between two ranks: of a point-to-point message of `size`
  // bytes (op CollectiveOp::none), or of one link of a collective `op` of nccl-tests' `size`
  // (the gathered output of an all-gather, the input of a reduce-scatter or all-to-all), whose
  // every ring step pays the latency and moves its block at the rate. By default the link's
  // latency and rate, whatever the op and size.
  virtual LinkRate link_rate(CollectiveOp /*op*/, int64_t /*size*/, int from_rank,
                             int to_rank) const {
    return {latency_seconds(from_rank, to_rank), bytes_per_second(from_rank, to_rank)};
  }
  // The link class joining two ranks (e.g. 0 nvlink, 1 ib): what "the same link" means above.
  virtual int link_class(int /*from_rank*/, int /*to_rank*/) const { return 0; }
  // How much slower a compute task runs while its rank has a transfer in flight. The simulator
  // applies it to the whole task when a message to or from the rank (or a collective) is in
  // flight at the moment the task starts: simple, and it never changes a task's length midway.
  virtual double compute_slowdown_while_transferring() const { return 1.0; }
  // The other direction. A message flows this many times slower while a rank at either end is
  // running a compute task (a collective: per link of its running step, with that link's two
  // ranks), the rate changing as compute tasks start and end.
  virtual double transfer_slowdown_while_computing() const { return 1.0; }
  // A transfer or collective that becomes ready while its rank runs (or launches) a compute
  // task is posted this many seconds after its own launch, or when that task ends if that is
  // sooner, but not before its launch is over.
  virtual double comm_start_delay_while_computing() const { return 0.0; }
  // How many times a step of `collective` in which a rank sends `pieces` spans to its peer (an
  // even all-to-all's batch of chunks, an uneven one's spans for that peer) pays its link's
  // latency: once (a message per peer), or once per piece where a transport copies an
  // all-to-all's pieces one by one.
  virtual int latencies_per_step(const Task& /*collective*/, int /*pieces*/) const { return 1; }
  // Seconds per byte of a block that the receiver of a collective `op` of `dtype` spends
  // reducing it outside the transfer, added to each step: 0 where the transfer reduces as it
  // moves (NCCL's kernels, the host ring).
  virtual double reduction_seconds_per_byte(CollectiveOp /*op*/, DType /*dtype*/) const {
    return 0.0;
  }
  // A compute task that starts while its rank has a collective in flight whose reduction takes
  // SMs of its own (reduction_seconds_per_byte > 0).
  virtual double compute_seconds_while_reducing(const Task& t, DType dtype, int rank) const {
    return compute_seconds_beside_comm(t, dtype, rank);
  }
  // Seconds from a task's becoming ready (its deps and its stream's previous task ended) to
  // its start: a kernel launch, a stream wake-up. Every rank's first tasks pay it too.
  virtual double launch_seconds(StreamId /*stream*/) const { return 0.0; }
  // The smallest d such that moving every rank by d around a ring of `world` ranks changes
  // nothing this model prices: rank r + d computes as r does, and (r + d, p + d) is priced as
  // (r, p). simulate_case then needs ranks 0..d-1 only. `world` (the default) claims nothing.
  virtual int rotation_period(int world) const;
};

// The same rates everywhere: GEMM time = flops / flops_per_second; add, copy and softmax time =
// bytes read plus written / mem_bytes_per_second (pass infinity to make them free); a message
// takes latency_seconds + bytes / bytes_per_second between any two ranks.
class UniformCost : public CostModel {
 public:
  UniformCost(double flops_per_second, double mem_bytes_per_second, double latency_seconds,
              double bytes_per_second, double slowdown_while_transferring = 1.0);
  double compute_seconds(const Task& t, DType dtype, int rank) const override;
  double transfer_seconds(int64_t bytes, int from_rank, int to_rank) const override;
  double latency_seconds(int /*from_rank*/, int /*to_rank*/) const override { return latency_; }
  double bytes_per_second(int /*from_rank*/, int /*to_rank*/) const override {
    return bytes_per_second_;
  }
  double compute_slowdown_while_transferring() const override { return slowdown_; }
  int rotation_period(int world) const override;  // 1: every rank and pair is priced alike

 private:
  double flops_per_second_, mem_bytes_per_second_, latency_, bytes_per_second_, slowdown_;
};

// Simulates one iteration of `plans` (one per rank, all of the same case; every rank starts at
// time 0). A message starts once both ends are posted, pays latency_seconds, then flows at
// bytes_per_second / max(flows leaving its sender, flows entering its receiver, over its link
// class), rates changing as flows start and end (a fluid model). A collective runs as the host
// backends run it (src/backends/host/ring.h): it starts once every rank has posted it and takes
// N-1 steps of one block each (Task::bytes / (N-1)), each step as long as its slowest link's
// latency plus one block at that link's share. In step s every rank r sends to r + shift(s):
// shift 1 in every step for an all-gather or reduce-scatter (the ring), s for an all-to-all
// (pairwise exchange, whose steps may cross different link classes). During a step it counts
// as one flow on each of that step's links (rank r's egress and r+shift's ingress), so it and
// concurrent messages slow one another. NCCL runs an all-to-all as concurrent sends to every
// peer, paying the latency about once; the simulator prices the host pairwise form
// (src/sim/collective_steps.h). A reduce-scatter's additions are priced only where the cost
// model says the receiver runs them (reduction_seconds_per_byte: --transport ce).
// Throws std::runtime_error naming the rank and task of an unmatched transfer or a deadlock.
CaseResult simulate_case(const std::vector<Plan>& plans, const CostModel& cost,
                         const std::string& case_id);

// The same for a case of `world` ranks simulated through `plans`, ranks 0..d-1 where d divides
// world and is a multiple of cost.rotation_period(world), each rank's plan being rank
// (r % d)'s moved by r - r % d (is_rotation_of). Rank r then runs exactly as rank r % d does:
// its events are those of r % d at the same instants, and a link between r and p is priced as
// the one between r % d and p - (r - r % d). So every simulated time is the one the
// simulation of all ranks gives, bit for bit (test_sim_rotation.cpp compares them on every
// bench_configs case), at d / world of its work. The result holds ranks 0..d-1
// (CaseResult::stored).
CaseResult simulate_case(const std::vector<Plan>& plans, int world, const CostModel& cost,
                         const std::string& case_id);

// Whether `plan` is `base` with every peer moved by plan.rank - base.rank around the ring: the
// same tasks, streams, dependencies, shapes, bytes, flops and tags, and an uneven all-to-all's
// blocks with every peer moved too (all the simulator reads).
bool is_rotation_of(const Plan& plan, const Plan& base);
// The plans simulate_case needs for `spec`: ranks 0..d-1 for d the least common multiple of
// cost.rotation_period(world) and plan_rotation_period(spec), else every rank's. Ranks d and
// world - 1 are checked to be rotations of theirs (a guard, not a proof: that every rank is,
// for every strategy and workload, is what test_sim_rotation.cpp checks).
std::vector<Plan> plans_to_simulate(const CaseSpec& spec, const CostModel& cost);
// simulate_case(plans_to_simulate(spec, cost), spec.world, cost, case_id).
CaseResult simulate_spec(const CaseSpec& spec, const CostModel& cost, const std::string& case_id);

}  // namespace fob
