// The CUPTI model's callback API (one subscriber, resource-domain graph node callbacks), graph
// node ids, record iteration and result strings; and the hooks it installs in the runtime model
// when it loads. Rules cite the CUDA 13 headers <cupti_callbacks.h>, <cupti_activity.h> and
// <cupti_result.h>, CUPTI's API reference (https://docs.nvidia.com/cupti/api/).
#include <cupti.h>

#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

#include "internal.h"

struct CUpti_Subscriber_st {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::set<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> enabled;
};

namespace fobcupti {
namespace {

std::mutex mutex;
CUpti_Subscriber_st* subscriber = nullptr;
std::unordered_map<uint64_t, uint64_t>* node_ids = new std::unordered_map<uint64_t, uint64_t>();

size_t round_up(size_t n) {
  return (n + ACTIVITY_RECORD_ALIGNMENT - 1) / ACTIVITY_RECORD_ALIGNMENT *
         ACTIVITY_RECORD_ALIGNMENT;
}

// The size of each record kind the model writes, as its CUDA 13 struct; 0 for any other kind.
size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    default:
      return 0;
  }
}

// Resource-domain callbacks are the ones the model delivers (graph nodes); another domain's
// callback would never come, which a client could not tell from "nothing happened".
bool delivered(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return domain == CUPTI_CB_DOMAIN_RESOURCE && (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
                                                cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
}

__attribute__((constructor)) void install() {
  fobmodel::CuptiHooks hooks;
  hooks.api = on_api;
  hooks.activity = on_activity;
  hooks.graph_node = on_graph_node;
  fobmodel::install_cupti_hooks(hooks);
}

}  // namespace

uint64_t graph_node_id(uint64_t node) {
  std::lock_guard lock(mutex);
  auto [it, added] = node_ids->try_emplace(node, node_ids->size() + 1);
  return it->second;
}

// CUpti_ResourceData for CUPTI_CB_DOMAIN_RESOURCE, its resourceDescriptor a CUpti_GraphData:
// node is the created (or cloned) node and originalNode the node it was cloned from. The client
// is called without the model's lock, since it calls back into CUPTI (cuptiGetGraphNodeId).
void on_graph_node(uint64_t node, uint64_t original) {
  const CUpti_CallbackId cbid =
      original == 0 ? CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED : CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard lock(mutex);
    if (!subscriber || !subscriber->enabled.contains({CUPTI_CB_DOMAIN_RESOURCE, cbid})) return;
    callback = subscriber->callback;
    userdata = subscriber->userdata;
  }
  CUpti_GraphData graph{};
  graph.node = reinterpret_cast<CUgraphNode>(node);
  graph.originalNode = reinterpret_cast<CUgraphNode>(original);
  graph.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
  CUpti_ResourceData data{};
  data.resourceDescriptor = &graph;
  if (callback) callback(userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
}

}  // namespace fobcupti

extern "C" {

// "Only a single subscriber can be registered at a time": CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_
// NOT_SUPPORTED "if there is already a CUPTI subscriber"; "CUPTI_ERROR_INVALID_PARAMETER if
// subscriber is NULL" (cuptiSubscribe).
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback,
                           void* userdata) {
  if (handle == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard lock(fobcupti::mutex);
  if (fobcupti::subscriber) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  fobcupti::subscriber = new CUpti_Subscriber_st{callback, userdata, {}};
  *handle = fobcupti::subscriber;
  return CUPTI_SUCCESS;
}

// "CUPTI_ERROR_INVALID_PARAMETER if subscriber is NULL or not initialized" (cuptiUnsubscribe).
CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle handle) {
  std::lock_guard lock(fobcupti::mutex);
  if (handle == nullptr || handle != fobcupti::subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  delete fobcupti::subscriber;
  fobcupti::subscriber = nullptr;
  return CUPTI_SUCCESS;
}

// "CUPTI_ERROR_INVALID_PARAMETER if subscriber, domain or cbid is invalid" (cuptiEnableCallback).
CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle handle,
                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  std::lock_guard lock(fobcupti::mutex);
  if (handle == nullptr || handle != fobcupti::subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  if (domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (domain == CUPTI_CB_DOMAIN_RESOURCE &&
      (cbid == CUPTI_CBID_RESOURCE_INVALID || cbid >= CUPTI_CBID_RESOURCE_SIZE)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (enable && !fobcupti::delivered(domain, cbid)) {
    fobmodel::violation("cupti", "cuptiEnableCallback: domain " + std::to_string(domain) +
                                     " callback " + std::to_string(cbid) +
                                     " is valid CUPTI the model does not deliver");
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  if (enable) {
    handle->enabled.insert({domain, cbid});
  } else {
    handle->enabled.erase({domain, cbid});
  }
  return CUPTI_SUCCESS;
}

// "CUPTI_ERROR_INVALID_PARAMETER if node is NULL" (cuptiGetGraphNodeId).
CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t* id) {
  if (node == nullptr || id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = fobcupti::graph_node_id(reinterpret_cast<uint64_t>(node));
  return CUPTI_SUCCESS;
}

// cuptiActivityGetNextRecord: the first record for *record == NULL, else the one after it;
// "CUPTI_ERROR_MAX_LIMIT_REACHED if no more records in the buffer", "CUPTI_ERROR_INVALID_PARAMETER
// if buffer is NULL", "CUPTI_ERROR_INVALID_KIND if activity record is either incomplete or
// invalid".
CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record != nullptr) {
    const size_t size = fobcupti::record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) +
             fobcupti::round_up(size);
  }
  if (offset >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  if (valid - offset < sizeof(CUpti_Activity)) return CUPTI_ERROR_INVALID_KIND;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  const size_t size = fobcupti::record_size(next->kind);
  if (size == 0 || valid - offset < size) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

// "CUPTI_ERROR_INVALID_PARAMETER if str is NULL or result is not a valid CUptiResult"
// (cuptiGetResultString). The model names the results it returns.
CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
#define FOB_CUPTI_NAME(r) \
  case r:                 \
    *str = #r;            \
    return CUPTI_SUCCESS;
    FOB_CUPTI_NAME(CUPTI_SUCCESS)
    FOB_CUPTI_NAME(CUPTI_ERROR_INVALID_PARAMETER)
    FOB_CUPTI_NAME(CUPTI_ERROR_INVALID_OPERATION)
    FOB_CUPTI_NAME(CUPTI_ERROR_MAX_LIMIT_REACHED)
    FOB_CUPTI_NAME(CUPTI_ERROR_NOT_COMPATIBLE)
    FOB_CUPTI_NAME(CUPTI_ERROR_NOT_INITIALIZED)
    FOB_CUPTI_NAME(CUPTI_ERROR_QUEUE_EMPTY)
    FOB_CUPTI_NAME(CUPTI_ERROR_INVALID_KIND)
    FOB_CUPTI_NAME(CUPTI_ERROR_NOT_SUPPORTED)
    FOB_CUPTI_NAME(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    FOB_CUPTI_NAME(CUPTI_ERROR_UNKNOWN)
#undef FOB_CUPTI_NAME
    default:
      break;
  }
  if (result > CUPTI_SUCCESS && result <= CUPTI_ERROR_INVALID_CHIP_NAME) {
    *str = "CUPTI_ERROR (a result the model never returns)";
    return CUPTI_SUCCESS;
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

}  // extern "C"
