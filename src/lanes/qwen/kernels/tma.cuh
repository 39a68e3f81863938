// Tensor Memory Accelerator loads into shared memory and the mbarriers that count their bytes
// (sm_90; PTX ISA, "cp.async.bulk.tensor" and "mbarrier"), the producer/consumer ring CUTLASS's
// PipelineTmaAsync builds from the same instructions, reduced to what a one-CTA kernel needs:
//   full[s]:  the producer arrives once with expect_tx(bytes); the copies' complete_tx brings the
//             count of bytes to zero; consumers wait on its phase parity.
//   empty[s]: each consumer warp arrives once when it has read the stage; the producer waits on
//             it before copying into the stage again.
// The loads are boxes of a tensor map (runtime/cuda/tensor_map.h). One-dimensional cp.async.bulk
// copies of 256 bytes a weight row were tried first: the step of 16 sequences took 19.9 ms
// against cuBLASLt's 5.25 (bench/RESULTS.md, twenty-seventh session), the copy engine's cost a
// request dominating.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace lg::qwen::dev {

/// The shared-state-space address of a pointer into shared memory.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// Initialises an mbarrier that completes a phase after `count` arrivals (and its byte count at 0).
/// Every thread must see it after mbar_init_fence() and a barrier.
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

/// Makes mbar_init visible to the asynchronous proxy (the TMA loads' complete_tx).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/// One arrival that also expects `bytes` more to be completed by TMA loads in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

/// One arrival (release: this thread's reads of the stage happen before the producer's next load).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

/// Returns once the phase with this parity has completed (acquire: the copies' bytes are visible).
/// A phase that never completes (a byte count that cannot be met: a bug) traps after ~2^35 cycles
/// (15-20 s), so the launch fails with an error instead of hanging the process.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
  const unsigned a = smem_addr(bar);
  const long long t0 = clock64();
  unsigned done = 0;
  for (;;) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(a), "r"(parity)
        : "memory");
    if (done) return;
    if (clock64() - t0 > (1ll << 35)) __trap();
  }
}

/// Loads the box at (c0 inner, c1 row) of the 2-D tensor map `map` (a __grid_constant__ kernel
/// parameter) into shared `dst` (1,024-byte aligned for the 128-byte swizzle), completing its
/// bytes (the whole box, zero-filled outside the tensor) on `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar,
                                            uint64_t l2_policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_addr(bar)), "l"(l2_policy)
      : "memory");
}

/// The L2 policies tma_load_2d takes (createpolicy, fraction 1.0).
__device__ __forceinline__ uint64_t l2_evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t l2_evict_last() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}

/// ldmatrix: four (x4) or two (x2) 8 x 8 bf16 matrices from shared memory, lane l giving the
/// address of row l % 8 of matrix l / 8 (16 bytes each); register i holds matrix i's fragment.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}

}  // namespace lg::qwen::dev
