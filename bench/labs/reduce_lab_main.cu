// Lab: one reduce stage of an emitted program (NVRTC source from `lg compile`), timed alone at
// T = 1 with random inputs. Build: nvcc -arch=sm_90 -O3 -std=c++17 -DPROGRAM='"program.cu"'
// -DKERNEL=k16_reduce -DGRID=15 reduce_lab_main.cu. The kernel's arguments here are Gemma-3-12B's
// post-attention stage (stages.txt "stage 10": f32 [T, 3840] x2 in, bf16 [3840] x2 weights,
// f32 [T, 3840] x2 out). Make program.cu with `lg compile models/gemma3_text.lg -c
// bench/shapes/gemma-3-12b-text -o DIR`; the variants of bench/RESULTS.md (seventh session) were
// that text edited with sed (an `_Pragma("unroll 8")` before a loop, a fixed span, ...). To count
// the reductions that take the serial fallback, insert `atomicAdd(&lg_fallbacks, 1ULL);` at the
// start of its `} else { for (long r = 0; ...` branch; the lab prints the count per launch.
// Use -DVARIANT='"name"' to label the line it prints.
#include <cstdio>
#include <cstdlib>
#include <vector>
__device__ unsigned long long lg_fallbacks;
#include PROGRAM

int main() {
  const long D = 3840, T = 1;
  float *p0, *p1, *p4, *p5;
  unsigned short *p2, *p3;
  cudaMalloc(&p0, D * T * 4); cudaMalloc(&p1, D * T * 4); cudaMalloc(&p4, D * T * 4); cudaMalloc(&p5, D * T * 4);
  cudaMalloc(&p2, D * 2); cudaMalloc(&p3, D * 2);
  std::vector<float> h(D * T);
  std::vector<unsigned short> w(D);
  srand(12345);
  for (auto& x : h) x = rand() / (float)RAND_MAX - 0.5f;
  for (auto& x : w) x = 0x3f80 + (rand() & 0x3f);
  cudaMemcpy(p0, h.data(), D * T * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(p1, h.data(), D * T * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(p2, w.data(), D * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(p3, w.data(), D * 2, cudaMemcpyHostToDevice);
  KERNEL<<<GRID, 256>>>(p0, p1, p2, p3, p4, p5, T);
  cudaDeviceSynchronize();
  unsigned long long zero = 0, fb = 0;
  cudaMemcpyToSymbol(lg_fallbacks, &zero, sizeof zero);
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  const int n = 200;
  cudaEventRecord(a);
  for (int i = 0; i < n; ++i) KERNEL<<<GRID, 256>>>(p0, p1, p2, p3, p4, p5, T);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaMemcpyFromSymbol(&fb, lg_fallbacks, sizeof fb);
  std::vector<float> o4(D), o5(D);
  cudaMemcpy(o4.data(), p4, D * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(o5.data(), p5, D * 4, cudaMemcpyDeviceToHost);
  double s4 = 0, s5 = 0;
  for (long i = 0; i < D; ++i) s4 += o4[i], s5 += o5[i];
  printf("%-28s %8.2f us/launch  serial-fallback reductions per launch %llu  checksums %.6f %.6f  %s\n", VARIANT,
         ms * 1e3 / n, fb / n, s4, s5, cudaGetErrorString(cudaGetLastError()));
  return 0;
}
