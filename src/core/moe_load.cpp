#include "fob/moe_load.h"

#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fob/moe.h"
#include "fob/transfer_messages.h"
#include "fob/workload.h"

namespace fob {
namespace {

// The bytes `plan`'s rank receives from other ranks into the buffer named `name`.
int64_t received_into(const Plan& plan, const char* name) {
  const int buffer = plan.buffer_id(name);
  if (buffer < 0) return 0;
  int64_t bytes = 0;
  for (const Task& t : plan.tasks) {
    if (!t.is_transfer()) continue;
    for (const Message& m : transfer_messages(plan, t)) {
      const bool in = m.role == Message::Role::receive || m.role == Message::Role::reduce;
      if (in && m.peer != plan.rank && m.view.buffer == buffer) bytes += message_bytes(plan, m);
    }
  }
  return bytes;
}

}  // namespace

MoeLoad moe_load(const std::vector<const Plan*>& plans) {
  MoeLoad load;
  if (plans.empty() || plans.front()->workload == nullptr ||
      !plans.front()->workload->has_experts ||
      static_cast<int>(plans.size()) != plans.front()->world) {
    return load;
  }
  const int64_t n = plans.front()->world;
  const std::shared_ptr<const MoeRouting> routed =
      shared_routing(moe_router(plans.front()->shape, n));
  const MoeRouting& routing = *routed;
  const int64_t e_count = routing.experts;
  load.expert_tokens.assign(static_cast<size_t>(e_count), 0);
  load.rank_tokens.assign(static_cast<size_t>(n), 0);
  load.token_matrix.assign(static_cast<size_t>(n * n), 0);
  load.dropped = routing.dropped;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t e = 0; e < e_count; ++e) {
      const int64_t kept = routing.kept[static_cast<size_t>(i * e_count + e)];
      load.expert_tokens[static_cast<size_t>(e)] += kept;
      load.token_matrix[static_cast<size_t>(i * n + e % n)] += kept;
      load.rank_tokens[static_cast<size_t>(e % n)] += kept;
    }
  }
  for (const Plan* plan : plans) {
    load.dispatch_bytes.push_back(received_into(*plan, kMoeDispatchBuffer));
    load.combine_bytes.push_back(received_into(*plan, kMoeCombineBuffer));
  }
  return load;
}

namespace {

std::string sizes_problem(const MoeLoad& load, int64_t world, int64_t experts) {
  const auto n = static_cast<size_t>(world);
  const std::pair<const char*, size_t> have[] = {{"dispatch_bytes", load.dispatch_bytes.size()},
                                                 {"combine_bytes", load.combine_bytes.size()},
                                                 {"rank_tokens", load.rank_tokens.size()},
                                                 {"dropped", load.dropped.size()}};
  for (const auto& [name, size] : have) {
    if (size != n) {
      return std::string(name) + " holds " + std::to_string(size) + " values, not one per rank (" +
             std::to_string(world) + ")";
    }
  }
  if (load.expert_tokens.size() != static_cast<size_t>(experts)) {
    return "expert_tokens holds " + std::to_string(load.expert_tokens.size()) +
           " values, not one per expert (" + std::to_string(experts) + ")";
  }
  if (load.token_matrix.size() != n * n) {
    return "token_matrix holds " + std::to_string(load.token_matrix.size()) + " values, not " +
           std::to_string(world) + " x " + std::to_string(world);
  }
  return "";
}

std::string range_problem(const char* name, const std::vector<int64_t>& values, int64_t most) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0 || values[i] > most) {
      return std::string(name) + "[" + std::to_string(i) + "] is " + std::to_string(values[i]) +
             ", outside 0.." + std::to_string(most);
    }
  }
  return "";
}

// Whether the counts add up as the router's do (the values already within their ranges, so
// no sum below can overflow).
std::string sums_problem(const MoeLoad& load, int64_t n, int64_t experts, int64_t choices) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = load.dropped[static_cast<size_t>(i)], column = 0, own = 0;
    for (int64_t j = 0; j < n; ++j) {
      row += load.token_matrix[static_cast<size_t>(i * n + j)];
      column += load.token_matrix[static_cast<size_t>(j * n + i)];
    }
    for (int64_t e = i; e < experts; e += n) own += load.expert_tokens[static_cast<size_t>(e)];
    if (row != choices) {
      return "rank " + std::to_string(i) + "'s tokens make " + std::to_string(choices) +
             " choices, but token_matrix and dropped hold " + std::to_string(row);
    }
    if (column != load.rank_tokens[static_cast<size_t>(i)] || own != column) {
      return "rank " + std::to_string(i) + "'s rank_tokens (" +
             std::to_string(load.rank_tokens[static_cast<size_t>(i)]) +
             ") is not what token_matrix (" + std::to_string(column) + ") and its experts (" +
             std::to_string(own) + ") say";
    }
  }
  return "";
}

}  // namespace

std::string moe_load_problem(const MoeLoad& load, int64_t world, int64_t experts, int64_t tokens,
                             int64_t top_k) {
  if (world < 1 || experts < 1 || top_k < 1 || tokens < world || tokens % world != 0 ||
      tokens > (int64_t{1} << 40) / top_k) {
    return "the case's world, experts, tokens and top_k cannot route tokens";
  }
  if (std::string why = sizes_problem(load, world, experts); !why.empty()) return why;
  const int64_t choices = tokens / world * top_k;  // of each rank's tokens
  constexpr int64_t kMostBytes = int64_t{1} << 62;
  for (const auto& [name, values, most] :
       {std::tuple<const char*, const std::vector<int64_t>&, int64_t>{
            "dispatch_bytes", load.dispatch_bytes, kMostBytes},
        {"combine_bytes", load.combine_bytes, kMostBytes},
        {"expert_tokens", load.expert_tokens, tokens},
        {"rank_tokens", load.rank_tokens, tokens * top_k},
        {"dropped", load.dropped, choices},
        {"token_matrix", load.token_matrix, choices}}) {
    if (std::string why = range_problem(name, values, most); !why.empty()) return why;
  }
  return sums_problem(load, world, experts, choices);
}

std::string moe_load_problem(const MoeLoad& load, const CaseKey& key) {
  const bool any = !load.dispatch_bytes.empty() || !load.combine_bytes.empty() ||
                   !load.expert_tokens.empty() || !load.rank_tokens.empty() ||
                   !load.dropped.empty() || !load.token_matrix.empty();
  if (!any) return "";
  if (key.experts <= 0) return "a case without experts holds an MoE load";
  constexpr int64_t kMost = int64_t{1} << 40;
  if (key.batch <= 0 || key.seq <= 0 || key.batch > kMost / key.seq) {
    return "the case's batch and seq cannot route tokens";
  }
  return moe_load_problem(load, key.world, key.experts, key.batch * key.seq, key.top_k);
}

}  // namespace fob
