// The routed experts of a mixture-of-experts layer as grouped GEMMs on the tensor cores, for steps
// of many tokens (prefill, large decode batches), as a device template the compiled lane's emitted
// experts stages instantiate (src/emit/cuda/experts_prefill.cpp). NVRTC pastes this text after
// flash_attention.cuh, whose mma/ldmatrix helpers it uses: no include directives, nothing from the
// standard library, bf16 as unsigned short bit patterns, every name in namespace lg_moe. C++17.
//
// The form is vLLM's fused_moe (moe_align_block_size, then one GEMM tile per block of an expert's
// rows), in CUDA:
//   1. route (one block): the (token, slot) pairs j = t * K + k of a step, counted per expert,
//      prefix-summed into each expert's segment of a sorted order, and listed as row tiles of
//      kTileM pairs of one expert each; pair j's sorted position is pos[j], position p's pair is
//      pair_at[p]. A pair whose expert index is out of range goes to an extra bucket, expert E,
//      whose tiles write NaN (the decode form's answer for a bad index).
//   2. grouped_gemm: block (row tile, column tile of kTileN outputs): C = A B^T over the
//      contraction, A the tile's pairs' activation rows (f32 in memory, rounded to bf16 on the way
//      into shared memory), B the expert's weight rows (bf16 [N, C], by cp.async); NB = 2
//      computes two products from one A tile (gate and up). Each output goes to the caller's
//      store with its sorted position and pair, which is where the SwiGLU or the expert-output
//      scratch is written.
// Within an expert the pairs' order is the atomics' (it varies run to run), but each output row
// is computed alone, in the same order over the contraction, so results do not depend on it.
//
// Tiles: 64 x 64 outputs, 4 warps as 2 x 2 of 32 x 32 (two m16 and four n8 mma tiles, per B
// matrix), contraction steps of 32 through shared memory (rows padded by 8 bf16, so that ldmatrix's
// 8 row addresses fall in 8 different 16-byte bank groups), three buffers deep: the weights of
// steps i + 1 and i + 2 and the activations of step i + 2 are in flight while step i's mma run.
// Against two buffers staged through registers (H200, 30B-A3B, session 14): a 2,048-token
// prefill 82.2 -> 73.7 ms, a decode step of 64 sequences 35.6 -> 32.3 ms. 64 rows, not 128: a
// prefill of 2,048 tokens routes 128 pairs to an expert on average (top-8 of 128), so 128-row tiles
// would leave many experts a mostly empty second tile, and decode batches of 64-256 sequences have
// 4-16 pairs an expert (not measured against 128). Fragment layouts: flash_attention.cuh's header.
namespace lg_moe {

// kTileM, max_tiles and route_ints are restated for the host in src/emit/cuda/grouped_gemm_shape.h
// (the plan's grid and route buffer); tests/emit/moe_shape_test.cu holds the two equal.
constexpr int kTileM = 64, kTileN = 64, kTileK = 32, kThreads = 128;
constexpr int kStride = kTileK + 8;  // bf16 elements per shared-memory row
constexpr int kMaxExperts = 4096;    // route's shared-memory counters (experts + the bad bucket)

/// Row tiles a step can need: each of the E + 1 buckets wastes less than one tile.
__host__ __device__ constexpr long max_tiles(long E, long P) { return P / kTileM + E + 2; }
/// The route workspace in ints for E experts and P pairs (route_view's layout).
__host__ __device__ constexpr long route_ints(long E, long P) { return 3 * (E + 1) + 2 + 2 * max_tiles(E, P) + 2 * P; }

/// The route workspace: count[b], seg[b] (first sorted position; seg[E + 1] = P), the tiles
/// (bucket, first row within the bucket), pair_at[p] and pos[j]. Buckets 0..E-1 are the experts,
/// E the pairs with an out-of-range index.
struct Route {
  int* count;
  int* seg;
  int* ntiles;
  int* tile_e;
  int* tile_r0;
  int* pair_at;
  int* pos;
};

__device__ __forceinline__ Route route_view(int* ws, int E, long P) {
  Route r;
  r.count = ws;
  r.seg = ws + (E + 1);
  r.ntiles = ws + 2 * (E + 1) + 1;
  r.tile_e = ws + 3 * (E + 1) + 2;
  r.tile_r0 = r.tile_e + max_tiles(E, P);
  r.pair_at = r.tile_r0 + max_tiles(E, P);
  r.pos = r.pair_at + P;
  return r;
}

/// Groups pairs 0..P-1 by bucket: `expert(j)` gives pair j's expert in 0..E-1, or E for a bad
/// index. One block of any size (1,024 threads: a few microseconds at P = 16,384); E <= 4095.
template <class Expert>
__device__ void route(const Expert& expert, long P, int E, int* ws) {
  __shared__ int s_count[kMaxExperts], s_cursor[kMaxExperts];
  const Route r = route_view(ws, E, P);
  for (int b = threadIdx.x; b <= E; b += blockDim.x) s_count[b] = 0;
  __syncthreads();
  for (long j = threadIdx.x; j < P; j += blockDim.x) atomicAdd(&s_count[expert(j)], 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    int s = 0, n = 0;
    for (int b = 0; b <= E; ++b) {
      r.count[b] = s_count[b];
      r.seg[b] = s;
      s_cursor[b] = s;
      for (int r0 = 0; r0 < s_count[b]; r0 += kTileM) {
        r.tile_e[n] = b;
        r.tile_r0[n] = r0;
        ++n;
      }
      s += s_count[b];
    }
    r.seg[E + 1] = s;
    *r.ntiles = n;
  }
  __syncthreads();
  for (long j = threadIdx.x; j < P; j += blockDim.x) {
    const int p = atomicAdd(&s_cursor[expert(j)], 1);
    r.pair_at[p] = static_cast<int>(j);
    r.pos[j] = p;
  }
}

/// cp.async of 16 bytes global -> shared, through L2 only; `bytes` 0 writes zeros (and reads
/// nothing), 16 copies.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

/// One output tile of the grouped GEMM (block (row tile, column tile); grid (max_tiles(E, P),
/// ceil(N / kTileN)), kThreads threads; blocks past the step's tiles return at once):
///   out_m[p, n] = sum_c a_row(pair_at[p])[c] * w(m, e)[n * C + c]   for m < NB,
/// for the sorted positions p of the tile's expert e, n < N; then store(p, j, n, out) once per
/// (p, n) with out[m] its NB values (NaN for the bad bucket). a_row(j): pair j's f32 activation
/// row, 16-byte aligned; w(m, e): expert e's bf16 weight matrix m, [N, C] row-major, 16-byte
/// aligned; C % 32 == 0.
///
/// Pipeline: kStages shared-memory buffers. The weights go global -> shared by cp.async, kStages - 1
/// steps ahead; the activations, which are rounded to bf16 on the way, through registers, loaded
/// two steps ahead and stored one step ahead. A buffer is rewritten kStages - 1 steps after it was
/// read, past the barrier that starts every step.
template <int NB, class ARow, class W, class Store>
__device__ void grouped_gemm(const ARow& a_row, const W& w, const Store& store, const int* ws, int E, long P, int N,
                             int C) {
  constexpr int kStages = 3;
  __shared__ __align__(16) unsigned short sa[kStages][kTileM * kStride];
  __shared__ __align__(16) unsigned short sb[kStages][NB][kTileN * kStride];
  const Route r = route_view(const_cast<int*>(ws), E, P);
  const int tile = blockIdx.x;
  if (tile >= *r.ntiles) return;
  const int e = r.tile_e[tile], r0 = r.tile_r0[tile], rows = r.count[e] - r0, first = r.seg[e] + r0;
  const int n0 = blockIdx.y * kTileN, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (e == E) {  // the bad bucket: NaN for every output of its pairs
    float nan[NB];
    for (int m = 0; m < NB; ++m) nan[m] = __int_as_float(0x7fc00000);
    for (int i = tid; i < kTileM * kTileN; i += kThreads) {
      const int row = i / kTileN, n = n0 + i % kTileN;
      if (row < rows && n < N) store(first + row, r.pair_at[first + row], n, nan);
    }
    return;
  }
  // This thread's loads of a contraction step: 4 float4 of A (row q / 8, columns (q % 8) * 4) and
  // per B matrix 2 x 16 bytes (row q / 4, columns (q % 4) * 8); rows past the tile's are zero.
  const float* arow[4];
  for (int u = 0; u < 4; ++u) {
    const int row = (tid + u * kThreads) >> 3;
    arow[u] = row < rows ? a_row(r.pair_at[first + row]) + ((tid + u * kThreads) & 7) * 4 : nullptr;
  }
  const unsigned short* brow[NB][2];
  int bbytes[2];
  for (int u = 0; u < 2; ++u) {
    const int row = (tid + u * kThreads) >> 2;
    bbytes[u] = n0 + row < N ? 16 : 0;
    for (int m = 0; m < NB; ++m)
      brow[m][u] = w(m, e) + static_cast<long>(n0 + row < N ? n0 + row : 0) * C + ((tid + u * kThreads) & 3) * 8;
  }
  float4 ra[4];
  auto load_a = [&](int k0) {
#pragma unroll
    for (int u = 0; u < 4; ++u) ra[u] = arow[u] ? *reinterpret_cast<const float4*>(arow[u] + k0) : make_float4(0.f, 0.f, 0.f, 0.f);
  };
  auto put_a = [&](int buf) {
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int q = tid + u * kThreads;
      uint2 v;
      v.x = lg_fa::pack_bf16x2(ra[u].x, ra[u].y);
      v.y = lg_fa::pack_bf16x2(ra[u].z, ra[u].w);
      *reinterpret_cast<uint2*>(&sa[buf][(q >> 3) * kStride + (q & 7) * 4]) = v;
    }
  };
  auto copy_b = [&](int buf, int k0) {
#pragma unroll
    for (int m = 0; m < NB; ++m)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int q = tid + u * kThreads;
        cp_async16(lg_fa::smem_addr(&sb[buf][m][(q >> 2) * kStride + (q & 3) * 8]), brow[m][u] + k0, bbytes[u]);
      }
  };
  float acc[NB][2][4][4];
#pragma unroll
  for (int m = 0; m < NB; ++m)
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[m][i][j][0] = acc[m][i][j][1] = acc[m][i][j][2] = acc[m][i][j][3] = 0.f;
  const int wm = warp >> 1, wn = warp & 1;
  // ldmatrix row addresses (bf16 elements into a tile): A as flash_attention's Q, B as its K.
  const int a_lane = (wm * 32 + (lane & 7) + ((lane >> 3) & 1) * 8) * kStride + (lane >> 4) * 8;
  const int b_lane = (wn * 32 + (lane >> 4) * 8 + (lane & 7)) * kStride + ((lane >> 3) & 1) * 8;
  const int steps = C / kTileK;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) copy_b(s, s * kTileK);
    cp_async_commit();
  }
  load_a(0);
  put_a(0);
  if (steps > 1) load_a(kTileK);
  for (int s = 0; s < steps; ++s) {
    const int buf = s % kStages;
    cp_async_wait<kStages - 2>();  // this thread's copies of step s have landed
    __syncthreads();               // everyone's, and step s's A; buffer (s - 1) % kStages is free
    if (s + kStages - 1 < steps) copy_b((s + kStages - 1) % kStages, (s + kStages - 1) * kTileK);
    cp_async_commit();
    if (s + 1 < steps) {
      put_a((s + 1) % kStages);
      if (s + 2 < steps) load_a((s + 2) * kTileK);
    }
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += 16) {
      unsigned a[2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i)
        lg_fa::ldmatrix_x4(lg_fa::smem_addr(&sa[buf][a_lane + i * 16 * kStride + kk]), a[i][0], a[i][1], a[i][2], a[i][3]);
#pragma unroll
      for (int m = 0; m < NB; ++m)
#pragma unroll
        for (int j = 0; j < 4; j += 2) {
          unsigned b0, b1, b2, b3;
          lg_fa::ldmatrix_x4(lg_fa::smem_addr(&sb[buf][m][b_lane + j * 8 * kStride + kk]), b0, b1, b2, b3);
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            lg_fa::mma_bf16_16816(acc[m][i][j], a[i], b0, b1);
            lg_fa::mma_bf16_16816(acc[m][i][j + 1], a[i], b2, b3);
          }
        }
    }
  }
  cp_async_wait<0>();
  // C fragment (i, j): rows wm * 32 + i * 16 + lane / 4 (+ 8 for elements 2, 3), columns
  // wn * 32 + j * 8 + 2 (lane % 4) (+ 1 for odd elements).
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = wm * 32 + i * 16 + (lane >> 2) + h * 8;
      if (row >= rows) continue;
      const int p = first + row, j = r.pair_at[p];
#pragma unroll
      for (int jn = 0; jn < 4; ++jn)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int n = n0 + wn * 32 + jn * 8 + (lane & 3) * 2 + c;
          if (n >= N) continue;
          float out[NB];
#pragma unroll
          for (int m = 0; m < NB; ++m) out[m] = acc[m][i][jn][h * 2 + c];
          store(p, j, n, out);
        }
    }
}

}  // namespace lg_moe
