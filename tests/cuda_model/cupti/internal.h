// What the CUPTI model's sources share: the hooks the runtime model calls (installed by
// callbacks.cpp when the library loads) and the graph node ids both halves use.
#pragma once

#include <cstdint>

#include "fobmodel/model.h"

namespace fobcupti {

// The hooks of activity.cpp: API activity records (with their external correlation records)
// and kernel, memcpy and memset records.
void on_api(fobmodel::Domain domain, uint32_t cbid, const char* name, uint32_t correlation,
            uint64_t start_ns, uint64_t end_ns);
void on_activity(const fobmodel::Op& op, uint32_t stream_id, uint64_t graph_node, uint64_t start_ns,
                 uint64_t end_ns);
// The hook of callbacks.cpp: CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED / _CLONED to the subscriber.
void on_graph_node(uint64_t node, uint64_t original);

// The id CUPTI gives a graph node: the runtime names a node by one 64-bit value in both its
// graph-node and activity hooks (its CUgraphNode handle), and CUPTI numbers each from 1 the first
// time it sees it, so cuptiGetGraphNodeId(handle) and a record's graphNodeId agree.
uint64_t graph_node_id(uint64_t node);

}  // namespace fobcupti
