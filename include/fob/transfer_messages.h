// A transfer task as the point-to-point messages it is made of, in the order a transport posts
// them: what a transport that moves data itself (the cuda backend's copy engines) needs to
// match the n-th message rank r sends to rank d with the n-th message d receives from r, as
// NCCL matches ncclSend and ncclRecv. Plans are the same on every rank up to the rank, so both
// sides list their messages in plan order and agree on the pairing without any tags.
#pragma once

#include <cstdint>
#include <vector>

#include "fob/plan.h"

namespace fob {

struct Message {
  enum class Role : uint8_t {
    send,     // `view` goes to `peer`
    receive,  // `view` is written by `peer`
    reduce,   // `peer`'s partial sum of `view` arrives, to be added into it
    local,    // `view` is this rank's own block, copied from `from` (no peer)
  };
  Role role = Role::send;
  int peer = -1;  // the other rank; -1 for a local copy
  View view;      // on this rank: the source of a send, the destination of the others
  View from;      // a local copy's source
};

// Task `t`'s messages, in posting order: the receives in rank order (a reduce-scatter's partial
// sums in the order they arrive, from the next rank down), the local
// copy of this rank's own block, then the sends, starting with the next rank up and going round
// (as a grouped exchange spreads them). An all-to-all block of several chunks is one message per
// chunk. Empty for a task that is not a transfer. Every view is whole rows of its buffer.
std::vector<Message> transfer_messages(const Plan& plan, const Task& t);

// An all-to-all's blocks in one form whichever form the task has: per peer, the spans this rank
// sends it and the spans its block lands in (PeerSpans). The even form's block for peer j is its
// `batch` chunks, a step apart. Every transport, the simulator and calibrate read an all-to-all
// through this, so none keeps the even form's stride arithmetic.
PeerSpans all_to_all_blocks(const Plan& plan, const Task& t);

// The bytes rank `rank` sends to each peer (its own entry 0) in an all-to-all of that plan.
std::vector<int64_t> all_to_all_sent_bytes(const Plan& plan, const Task& t);

// The bytes a message moves: its view's rows of whole buffer rows.
int64_t message_bytes(const Plan& plan, const Message& m);

}  // namespace fob
