// Kernels on the model (device.h): a launch is an op; when it runs, each block's threads run as
// fibers (Boost.Context) on the stream's thread, and a barrier (__syncthreads, a warp shuffle)
// suspends a fiber until every thread of its block or warp has arrived. Accesses traced by
// sanitizer coverage arrive through the __sanitizer_cov_load/store hooks.
#include <boost/context/fiber.hpp>

#include <array>
#include <cstdlib>
#include <cstring>

#include "fobmodel/device.h"
#include "internal.h"

namespace fobmodel::kernel {
namespace {

namespace ctx = boost::context;

constexpr size_t kStackBytes = 64 << 10;
constexpr size_t kWarp = 32;
constexpr size_t kMaxShuffleBytes = 16;

// Fiber stacks reused across blocks and launches of this stream thread.
class StackPool {
 public:
  ~StackPool() {
    for (void* stack : free_) std::free(stack);
  }
  ctx::stack_context allocate() {
    void* stack = nullptr;
    if (free_.empty()) {
      stack = std::malloc(kStackBytes);
    } else {
      stack = free_.back();
      free_.pop_back();
    }
    ctx::stack_context context;
    context.size = kStackBytes;
    context.sp = static_cast<char*>(stack) + kStackBytes;
    return context;
  }
  void deallocate(ctx::stack_context& context) {
    free_.push_back(static_cast<char*>(context.sp) - context.size);
  }

 private:
  std::vector<void*> free_;
};
thread_local StackPool stack_pool;

struct PooledStack {
  ctx::stack_context allocate() { return stack_pool.allocate(); }
  void deallocate(ctx::stack_context& context) { stack_pool.deallocate(context); }
};

struct Barrier {
  size_t arrived = 0;
  uint64_t generation = 0;
};

// One block in flight on this thread.
struct Block {
  dim3 grid;
  dim3 dims;
  uint3 index;
  size_t threads = 0;
  std::vector<Position> positions;
  std::vector<ctx::fiber*> sinks;  // each fiber's way back to the scheduler
  Barrier block_barrier;
  std::vector<Barrier> warp_barriers;
  std::array<std::vector<std::array<unsigned char, kMaxShuffleBytes>>, 2> exchange;
  size_t current = 0;
  bool stalled = false;
};
thread_local Block* running = nullptr;

void suspend() {
  Block& block = *running;
  const size_t me = block.current;
  ctx::fiber& sink = *block.sinks[me];
  sink = std::move(sink).resume();
  running->current = me;
}

// Waits until `barrier` has seen `members` arrivals of this generation.
void arrive(Barrier& barrier, size_t members) {
  const uint64_t generation = barrier.generation;
  if (++barrier.arrived == members) {
    barrier.arrived = 0;
    ++barrier.generation;
    return;
  }
  suspend();  // arriving was progress; a later resume that finds the barrier closed is not
  while (barrier.generation == generation) {
    running->stalled = true;
    suspend();
  }
}

// Runs every thread of the block to completion; a round in which every fiber found its barrier
// still closed can never end (divergent barrier): the rule "barrier".
void run_block(Block& block, const std::function<void()>& body) {
  std::vector<ctx::fiber> fibers;
  fibers.reserve(block.threads);
  block.sinks.assign(block.threads, nullptr);
  for (size_t t = 0; t < block.threads; ++t) {
    fibers.emplace_back(std::allocator_arg, PooledStack{}, [&block, &body, t](ctx::fiber&& sink) {
      block.sinks[t] = &sink;
      body();
      return std::move(sink);
    });
  }
  std::vector<bool> finished(block.threads, false);
  size_t remaining = block.threads;
  while (remaining > 0) {
    bool progressed = false;
    for (size_t t = 0; t < block.threads; ++t) {
      if (finished[t]) continue;
      block.current = t;
      block.stalled = false;
      fibers[t] = std::move(fibers[t]).resume();
      if (!fibers[t]) {
        finished[t] = true;
        --remaining;
      }
      progressed = progressed || !block.stalled;
    }
    if (!progressed) {
      violation("barrier",
                "a kernel's threads wait at a barrier that not every thread of the "
                "block (or warp) reaches");
      return;
    }
  }
}

void run_grid(dim3 grid, dim3 dims, const std::function<void()>& body) {
  Block block;
  block.grid = grid;
  block.dims = dims;
  block.threads = size_t{dims.x} * dims.y * dims.z;
  block.positions.resize(block.threads);
  block.warp_barriers.resize((block.threads + kWarp - 1) / kWarp);
  for (auto& slots : block.exchange) slots.resize(block.threads);
  running = &block;
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        for (size_t t = 0; t < block.threads; ++t) {
          const unsigned tx = static_cast<unsigned>(t % dims.x);
          const unsigned ty = static_cast<unsigned>(t / dims.x % dims.y);
          const unsigned tz = static_cast<unsigned>(t / (size_t{dims.x} * dims.y));
          block.positions[t] = Position{{tx, ty, tz}, {x, y, z}, dims, grid};
        }
        run_block(block, body);
      }
    }
  }
  running = nullptr;
}

}  // namespace

const Position& position() {
  return running->positions[running->current];
}

// "__syncthreads() waits until all threads in the thread block have reached this point"
// (CUDA C++ Programming Guide, Synchronization Functions).
void sync_block() {
  arrive(running->block_barrier, running->threads);
}

void warp_exchange(const void* mine, void* out, size_t bytes, int source) {
  Block& block = *running;
  const size_t me = block.current;
  const size_t warp = me / kWarp;
  const size_t members = std::min(kWarp, block.threads - warp * kWarp);
  Barrier& barrier = block.warp_barriers[warp];
  auto& slots = block.exchange[barrier.generation & 1];
  std::memcpy(slots[me].data(), mine, bytes);
  arrive(barrier, members);
  const size_t from = warp * kWarp + static_cast<size_t>(source);
  if (source >= 0 && static_cast<size_t>(source) < members) {
    std::memcpy(out, slots[from].data(), bytes);
  }
}

void add_argument_footprint(std::vector<Footprint>& footprint, const void* pointer, bool write) {
  int device = -1;
  if (pointer == nullptr || memory_of(pointer, &device) != Memory::device) return;
  size_t size = 0;
  const void* base = detail::allocation_of(pointer, &size);
  if (base != nullptr) footprint.push_back(Footprint{base, size, 1, size, write});
}

// "gridDim ... blockDim": at most 1024 threads per block and 65535 blocks in y and z
// (CUDA C++ Programming Guide, Compute Capabilities); anything else is
// cudaErrorInvalidConfiguration at launch.
void launch(const char* name, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
            std::function<void()> thread_body, std::vector<Footprint> footprint, bool traced) {
  (void)shmem;
  const size_t threads = size_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      grid.y > 65535 || grid.z > 65535) {
    record_error(cudaErrorInvalidConfiguration);
    return;
  }
  ApiCall call(Domain::runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
               "cudaLaunchKernel");
  Op op;
  op.name = name;
  op.activity = Activity::kernel;
  op.footprint = std::move(footprint);
  op.traces_accesses = traced;
  op.run = [grid, block, body = std::move(thread_body)] { run_grid(grid, block, body); };
  enqueue(stream, std::move(op));
}

}  // namespace fobmodel::kernel

// The hooks clang's -fsanitize-coverage=trace-loads,trace-stores calls before every load and
// store of an instrumented file.
#define FOB_MODEL_COVERAGE_HOOK(bits, bytes)                              \
  extern "C" void __sanitizer_cov_load##bytes(uint##bits##_t* address) {  \
    fobmodel::detail::kernel_access(address, bytes, false);               \
  }                                                                       \
  extern "C" void __sanitizer_cov_store##bytes(uint##bits##_t* address) { \
    fobmodel::detail::kernel_access(address, bytes, true);                \
  }
FOB_MODEL_COVERAGE_HOOK(8, 1)
FOB_MODEL_COVERAGE_HOOK(16, 2)
FOB_MODEL_COVERAGE_HOOK(32, 4)
FOB_MODEL_COVERAGE_HOOK(64, 8)

extern "C" void __sanitizer_cov_load16(__int128* address) {
  fobmodel::detail::kernel_access(address, 16, false);
}
extern "C" void __sanitizer_cov_store16(__int128* address) {
  fobmodel::detail::kernel_access(address, 16, true);
}
