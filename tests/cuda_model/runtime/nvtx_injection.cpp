// The NVTX injection library of the cuda model: NVTX3 (header-only in the cuda backend) loads the
// library NVTX_INJECTION64_PATH names and calls its InitializeInjectionNvtx2, which fills NVTX's
// core function table (nvtx3/nvtxDetail/nvtxInit.h, "injection library"). The ranges go to the
// model, so that each op knows the plan task its thread was in (Op::task).
#include "nvtx3/nvToolsExt.h"

#include "fobmodel/model.h"

namespace {

int push_a(const char* message) {
  fobmodel::nvtx_push(message);
  return 0;
}

int push_ex(const nvtxEventAttributes_t* attributes) {
  const bool ascii = attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII;
  fobmodel::nvtx_push(ascii ? attributes->message.ascii : "");
  return 0;
}

int pop() {
  fobmodel::nvtx_pop();
  return 0;
}

nvtxRangeId_t start_a(const char* message) {
  return fobmodel::nvtx_start(message);
}

nvtxRangeId_t start_ex(const nvtxEventAttributes_t* attributes) {
  const bool ascii = attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII;
  return fobmodel::nvtx_start(ascii ? attributes->message.ascii : "");
}

void end(nvtxRangeId_t id) {
  fobmodel::nvtx_end(id);
}

template <typename Function>
void install(NvtxFunctionTable table, unsigned size, NvtxCallbackIdCore id, Function function) {
  if (static_cast<unsigned>(id) <= size && table[id] != nullptr) {
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(function);
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table) return 0;
  install(table, size, NVTX_CBID_CORE_RangePushA, push_a);
  install(table, size, NVTX_CBID_CORE_RangePushEx, push_ex);
  install(table, size, NVTX_CBID_CORE_RangePop, pop);
  install(table, size, NVTX_CBID_CORE_RangeStartA, start_a);
  install(table, size, NVTX_CBID_CORE_RangeStartEx, start_ex);
  install(table, size, NVTX_CBID_CORE_RangeEnd, end);
  return 1;
}
