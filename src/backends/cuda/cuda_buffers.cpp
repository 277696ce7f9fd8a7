#include "cuda_buffers.h"

#include <algorithm>

#include "fob/device_plan.h"
#include "fob/inputs.h"

namespace fob {

void allocate_device_buffers(const Plan& plan, Prepared& p, const Checker& check) {
  const int elem = dtype_bytes(plan.dtype);
  for (const BufferSpec& b : plan.buffers) {
    void* ptr = nullptr;
    check.cuda(cudaMalloc(&ptr, std::max<int64_t>(b.rows * b.cols * elem, 1)),
               "cudaMalloc for a plan buffer");
    p.device.push_back(ptr);
  }
  if (const int64_t stage = stage_elements(plan); stage > 0) {
    check.cuda(cudaMalloc(&p.stage, stage * elem), "cudaMalloc for collective staging");
  }
}

void fill_inputs(const Plan& plan, uint64_t seed, Prepared& p, const Checker& check) {
  std::vector<double> values;
  std::vector<char> converted;
  const int elem = dtype_bytes(plan.dtype);
  for (const InputRegion& region : plan.inputs) {
    const int64_t cols = plan.buffers[region.buffer].cols;
    values.resize(region.rows * cols);
    fill_input(plan, region, seed, values.data());
    converted.resize(values.size() * elem);
    to_device_type(plan.dtype, values.data(), static_cast<int64_t>(values.size()),
                   converted.data());
    char* dst = static_cast<char*>(p.device[region.buffer]) + region.row * cols * elem;
    check.cuda(cudaMemcpy(dst, converted.data(), converted.size(), cudaMemcpyHostToDevice),
               "copying inputs to the device");
  }
  check.cuda(cudaDeviceSynchronize(), "filling inputs");
}

void poison_buffers(const Plan& plan, uint64_t seed, Prepared& p, const Checker& check) {
  // All-ones bytes are a NaN in every floating-point type used here.
  for (size_t i = 0; i < p.device.size(); ++i) {
    const int64_t bytes = plan.buffers[i].rows * plan.buffers[i].cols * dtype_bytes(plan.dtype);
    check.cuda(cudaMemset(p.device[i], 0xff, bytes), "poisoning a buffer");
  }
  fill_inputs(plan, seed, p, check);
}

std::vector<double> read_buffer(const Plan& plan, const Prepared& p, int buffer,
                                const Checker& check) {
  const int64_t count = plan.buffers[buffer].rows * plan.buffers[buffer].cols;
  std::vector<char> raw(count * dtype_bytes(plan.dtype));
  check.cuda(cudaMemcpy(raw.data(), p.device[buffer], raw.size(), cudaMemcpyDeviceToHost),
             "reading a buffer back");
  std::vector<double> out(count);
  for (int64_t i = 0; i < count; ++i) out[i] = element_as_double(plan.dtype, raw.data(), i);
  return out;
}

void release_prepared(Prepared& p) {
  // The graph first: its event-record nodes refer to the events destroyed below.
  if (p.graph) cudaGraphExecDestroy(p.graph);
  p.graph = nullptr;
  for (void* ptr : p.device) cudaFree(ptr);
  if (p.stage) cudaFree(p.stage);
  for (void* ptr : p.host) {
    if (ptr) cudaFreeHost(ptr);
  }
  for (void* ptr : p.host_scratch) {
    if (ptr) cudaFreeHost(ptr);
  }
  for (auto* events : {&p.done, &p.start, &p.end}) {
    for (cudaEvent_t e : *events) cudaEventDestroy(e);
  }
  p = Prepared{};
}

int64_t PlanBuffers::offset_bytes(const View& v, int64_t extra_rows) const {
  return (view_offset(*plan_, v) + extra_rows * cols(v.buffer)) * elem();
}
void* PlanBuffers::device_at(const View& v, int64_t extra_rows) const {
  return static_cast<char*>(prepared_->device[v.buffer]) + offset_bytes(v, extra_rows);
}
void* PlanBuffers::host_at(const View& v, int64_t extra_rows) const {
  return static_cast<char*>(prepared_->host[v.buffer]) + offset_bytes(v, extra_rows);
}

}  // namespace fob
