// The compiled lane's policies for lg_fa::attention_block (src/kernels/flash_attention.cuh): how
// an emitted prefill attention kernel feeds the tensor-core template its q/k/v tiles and takes its
// outputs. Emitted programs only: src/emit/CMakeLists.txt embeds the text after the `#pragma once`
// line and the blank line that follows it, and src/emit/cuda/prelude.cpp pastes it after the
// flash-attention template (it names lg_fa::pack_bf16x2). The same rules as that template: no
// include directives, nothing from the standard library, names prefixed lg_.
#pragma once

// The compiled program's policies for lg_fa::attention_block.
// When k and v are layer slices of f32 caches laid out [kv head][position][dim] (what `kcache[l]`
// reads): a pack kernel first rounds the rows the step attends to into a bf16 copy of the same
// layout, so the tiles are 16-byte loads of 8 bf16 (half the bytes of the f32 rows, read by every
// query tile); q comes packed as bf16 [T, H * DH] by a pack kernel (its RoPE and norms computed
// once per element there, at full occupancy, not inside this 2-blocks-per-SM kernel).
template <int DH, class P, class O> struct lg_attn_policy_rows {
  const P& p; const O& o;
  const unsigned short* q; long q_row;
  const unsigned short* k; const unsigned short* v; long head_stride, row_stride;
  __device__ __forceinline__ uint4 row8(const unsigned short* base, int kvh, int j, int d0) const {
    return *reinterpret_cast<const uint4*>(base + kvh * head_stride + j * row_stride + d0);
  }
  __device__ uint4 load_q8(int t, int h, int d0) const {
    return *reinterpret_cast<const uint4*>(q + t * q_row + h * DH + d0);
  }
  __device__ uint4 load_k8(int kvh, int j, int d0) const { return row8(k, kvh, j, d0); }
  __device__ uint4 load_v8(int kvh, int j, int d0) const { return row8(v, kvh, j, d0); }
  __device__ int pos(int t) const { return (int)p(t); }
  __device__ void store_o2(int t, int h, int d, float o0, float o1) const { o(t, h, d, o0, o1); }
};
// Otherwise: q, k, v and the query positions are the attention stage's own lambdas (views, RoPE,
// norms inline), rounded to bf16 on the way in.
template <class Q, class K, class V, class P, class O> struct lg_attn_policy {
  const Q& q; const K& k; const V& v; const P& p; const O& o;
  template <class F> __device__ __forceinline__ uint4 pack8(const F& f, int a, int b, int d0) const {
    uint4 r;
    r.x = lg_fa::pack_bf16x2(f(a, b, d0), f(a, b, d0 + 1));
    r.y = lg_fa::pack_bf16x2(f(a, b, d0 + 2), f(a, b, d0 + 3));
    r.z = lg_fa::pack_bf16x2(f(a, b, d0 + 4), f(a, b, d0 + 5));
    r.w = lg_fa::pack_bf16x2(f(a, b, d0 + 6), f(a, b, d0 + 7));
    return r;
  }
  __device__ uint4 load_q8(int t, int h, int d0) const { return pack8(q, t, h, d0); }
  __device__ uint4 load_k8(int kvh, int j, int d0) const { return pack8(k, kvh, j, d0); }
  __device__ uint4 load_v8(int kvh, int j, int d0) const { return pack8(v, kvh, j, d0); }
  __device__ int pos(int t) const { return (int)p(t); }
  __device__ void store_o2(int t, int h, int d, float o0, float o1) const { o(t, h, d, o0, o1); }
};
