#include "lanes/compiled/compiled_lane.h"
#include "lanes/one_sequence_lane.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "emit/cuda/nvrtc.h"
#include "emit/cuda/program.h"
#include "kernels/launch_policy.h"
#include "lift/lift.h"
#include "lanes/compiled/device_ops.h"
#include "lift/passes.h"
#include "model/model_dir.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/fill.h"
#include "runtime/cuda/gemm_lt.h"
#include "runtime/forward_graph.h"
#include "support/error.h"
#include "support/fnv1a.h"

namespace lg {

namespace {

using emit::cuda::BufferKind;

void progress(const std::string& msg) {
  if (isatty(STDERR_FILENO)) std::cerr << "\r\033[K" << msg << std::flush;
}

class CompiledLane : public OneSequenceLane {
 public:
  /// `ckpt` null: random weights from `seed` (matrices uniform with std 0.02, transformers'
  /// initializer_range; 1-D norm weights 1, other 1-D params 0, as a fresh HF model).
  CompiledLane(runtime::ForwardGraph fg, const model::Checkpoint* ckpt, uint64_t seed) : OneSequenceLane(fg.max_seq) {
    if (!cuda::cuda_device_available()) throw Error("compiled lane: no CUDA device");
    max_seq_ = fg.max_seq;
    lift::StagedProgram staged = lift::lift(fg.graph);
    lift::fuse(staged);
    prog_ = emit::cuda::emit_program(staged);
    const ir::Graph& g = staged.graph;
    compile_kernels(g.model);
    // Buffers: weights uploaded once, states zeroed, inputs and the arena allocated.
    arena_ = cuda::DeviceBuffer(static_cast<size_t>(std::max<int64_t>(prog_.arena_bytes, 256)));
    ptrs_.resize(prog_.buffers.size());
    size_t done = 0;
    for (size_t i = 0; i < prog_.buffers.size(); ++i) {
      const auto& b = prog_.buffers[i];
      if (b.kind == BufferKind::Arena) {
        ptrs_[i] = static_cast<char*>(arena_.data()) + b.offset;
        continue;
      }
      owned_.emplace_back(static_cast<size_t>(std::max<int64_t>(b.bytes, 16)));
      ptrs_[i] = owned_.back().data();
      if (b.kind == BufferKind::State) LG_CUDA_CHECK(cudaMemset(ptrs_[i], 0, static_cast<size_t>(b.bytes)));
      if (b.kind == BufferKind::Input) input_ptr_.push_back(static_cast<int32_t*>(ptrs_[i]));
      if (b.kind == BufferKind::Weight) {
        progress("compiled lane: " + std::string(ckpt ? "uploading" : "making random") + " weights " +
                 std::to_string(++done) + "/" + std::to_string(g.params.size()));
        const ir::ParamInfo& prm = g.params[static_cast<size_t>(b.index)];
        if (ckpt) upload_weight(*ckpt, prm.tensor, b, owned_.back());
        else random_weight(prm, b, owned_.back(), seed);
      }
    }
    for (const auto& in : g.inputs)
      if (in.name != "tokens" && in.name != "pos")
        throw Error("compiled lane: the forward takes input `" + in.name + "`; the lane feeds tokens and pos");
    find_last_row_launch(staged);
    tokens_is_first_ = g.inputs.at(0).name == "tokens";
    vocab_ = g.at(g.outputs.at(0)).shape.back().coeff;
    argmax_ = cuda::DeviceBuffer(sizeof(int32_t));
    LG_CUDA_CHECK(cudaMallocHost(&pinned_, static_cast<size_t>(2 * prog_.max_t + 1) * sizeof(int32_t)));
    stream_.synchronize();
    progress("");
    profile_ = std::getenv("LG_PROFILE_LAUNCHES") != nullptr;
    const char* pdl = std::getenv("LG_COMPILED_PDL");
    pdl_ = !(pdl && std::string(pdl) == "0");
    // The decode GEMV grid is capped at kGemvBlocksPerSm blocks per SM (the policy both lanes
    // share, src/kernels/launch_policy.h, with this lane's measurements): a GEMM stage's kernel
    // strides over its outputs, so fewer blocks means fewer per-block prologues (the RMSNorm
    // and the staged activation row, read from L2 by every block) for the same weight stream.
    // LG_COMPILED_GEMV_BPS overrides it for measurements (0: one block per 8 outputs).
    const char* bps = std::getenv("LG_COMPILED_GEMV_BPS");
    gemv_max_blocks_ = static_cast<int64_t>(bps && *bps ? std::atoi(bps) : lg::kernels::kGemvBlocksPerSm) * cuda::sm_count();
  }

  ~CompiledLane() override {
    graph_.reset();
    if (pinned_) cudaFreeHost(pinned_);
    for (cudaLibrary_t lib : libs_) cudaLibraryUnload(lib);
  }

  std::string name() const override { return "compiled"; }
  Provenance provenance() const override { return Compiled{}; }
  SeqResult step_one(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) override {
    if (tokens.empty()) throw Error("compiled lane: empty step");
    auto T = static_cast<int64_t>(tokens.size());
    if (start_pos < 0 || start_pos + T > max_seq_)
      throw Error("compiled lane: positions " + std::to_string(start_pos) + ".." + std::to_string(start_pos + T - 1) +
                  " exceed the KV cache of " + std::to_string(max_seq_));
    if (T > prog_.max_t)
      throw Error("compiled lane: a step of " + std::to_string(T) + " tokens exceeds the program's largest T (" +
                  std::to_string(prog_.max_t) + ")");
    // Pinned staging: cudaMemcpyAsync from pageable memory is staged through a driver buffer and
    // is not asynchronous; from pinned memory it is a plain DMA.
    int32_t* htok = pinned_;
    int32_t* hpos = pinned_ + prog_.max_t;
    std::copy(tokens.begin(), tokens.end(), htok);
    for (int64_t i = 0; i < T; ++i) hpos[i] = static_cast<int32_t>(start_pos + i);
    int32_t* dtok = input_ptr_[tokens_is_first_ ? 0 : 1];
    int32_t* dpos = input_ptr_[tokens_is_first_ ? 1 : 0];
    cudaStream_t s = stream_.get();
    LG_CUDA_CHECK(cudaMemcpyAsync(dtok, htok, tokens.size() * 4, cudaMemcpyHostToDevice, s));
    LG_CUDA_CHECK(cudaMemcpyAsync(dpos, hpos, tokens.size() * 4, cudaMemcpyHostToDevice, s));
    if (profile_ && ++steps_seen_[T] == 2) profile(T);
    const float* last_row = static_cast<const float*>(ptrs_[static_cast<size_t>(prog_.outputs[0])]) + (T - 1) * vocab_;
    if (T == 1) {
      if (!graph_.ready()) {
        graph_.begin_capture(s);
        launch_all(1);
        compiled::argmax(last_row, static_cast<long>(vocab_), argmax_.as<int>(), s);
        graph_.end_capture(s);
      }
      graph_.launch(s);
    } else {
      launch_all(T);
      compiled::argmax(last_row, static_cast<long>(vocab_), argmax_.as<int>(), s);
    }
    SeqResult r;
    int32_t* hargmax = pinned_ + 2 * prog_.max_t;
    LG_CUDA_CHECK(cudaMemcpyAsync(hargmax, argmax_.data(), sizeof(int32_t), cudaMemcpyDeviceToHost, s));
    if (want_logits) {
      r.logits.resize(static_cast<size_t>(vocab_));
      LG_CUDA_CHECK(cudaMemcpyAsync(r.logits.data(), last_row, r.logits.size() * 4, cudaMemcpyDeviceToHost, s));
    }
    stream_.synchronize();
    r.argmax = *hargmax;
    return r;
  }



 private:
  // NVRTC compiles the kernels in chunks on every core (each kernel that instantiates the
  // flash-attention template takes seconds at -O3); each chunk is its own cached cubin and library.
  void compile_kernels(const std::string& model) {
    const size_t nk = prog_.kernels.size();
    const size_t threads = std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), 32));
    const size_t per = std::max<size_t>(1, (nk + threads - 1) / threads);
    progress("compiled lane: compiling " + std::to_string(nk) + " kernels with NVRTC on " + std::to_string(threads) +
             " threads...");
    std::vector<std::future<std::vector<char>>> jobs;
    for (size_t k0 = 0; k0 < nk; k0 += per) {
      std::string src = "// " + model + ": kernels " + std::to_string(k0) + ".." +
                        std::to_string(std::min(nk, k0 + per) - 1) + " of the compiled program.\n" + prog_.prelude;
      for (size_t k = k0; k < std::min(nk, k0 + per); ++k) src += "\n" + prog_.kernels[k].source;
      jobs.push_back(std::async(std::launch::async, [src = std::move(src), model] {
        return emit::cuda::nvrtc_compile_cached(src, model, "sm_90");
      }));
    }
    kernels_.resize(nk);
    for (size_t c = 0; c < jobs.size(); ++c) {
      std::vector<char> cubin = jobs[c].get();
      cudaLibrary_t lib = nullptr;
      LG_CUDA_CHECK(cudaLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
      libs_.push_back(lib);
      for (size_t k = c * per; k < std::min(nk, (c + 1) * per); ++k)
        LG_CUDA_CHECK(cudaLibraryGetKernel(&kernels_[k], lib, prog_.kernels[k].name.c_str()));
    }
  }

  void upload_weight(const model::Checkpoint& ckpt, const std::string& tensor, const emit::cuda::Buffer& b,
                     cuda::DeviceBuffer& dst) {
    const auto& info = ckpt.info(tensor);
    if (info.dtype == b.dtype) {  // bf16 -> bf16 or f32 -> f32: the bytes as they are
      auto bytes = ckpt.bytes(tensor);
      LG_CUDA_CHECK(cudaMemcpyAsync(dst.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream_.get()));
      stream_.synchronize();
      return;
    }
    if (info.dtype == DType::BF16 && b.dtype == DType::F32) {  // widen on the device (exact)
      auto bytes = ckpt.bytes(tensor);
      cuda::DeviceBuffer tmp(bytes.size());
      LG_CUDA_CHECK(cudaMemcpyAsync(tmp.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream_.get()));
      compiled::widen_bf16(tmp.as<uint16_t>(), bytes.size() / 2, dst.as<float>(), stream_.get());
      stream_.synchronize();
      return;
    }
    std::vector<float> f = ckpt.to_f32(tensor);
    if (b.dtype == DType::BF16) {
      std::vector<uint16_t> h(f.size());
      for (size_t j = 0; j < f.size(); ++j) h[j] = f32_to_bf16(f[j]);
      dst.upload(h.data(), h.size() * 2);
    } else {
      dst.upload(f.data(), f.size() * 4);
    }
  }

  void random_weight(const ir::ParamInfo& prm, const emit::cuda::Buffer& b, cuda::DeviceBuffer& dst, uint64_t seed) {
    const size_t n = static_cast<size_t>(b.bytes) / dtype_size(b.dtype);
    if (prm.shape.size() >= 2) {
      if (b.dtype != DType::BF16)
        throw Error("compiled lane: random weights are made for bf16 matrices; `" + prm.tensor + "` is " +
                    std::string(dtype_name(b.dtype)));
      // The tensor name picks the stream, so every weight differs and reruns are identical.
      const uint64_t tensor_seed = fnv1a64(prm.tensor, kFnv1a64Basis ^ seed);
      cuda::fill_uniform_bf16(dst.as<__nv_bfloat16>(), n, tensor_seed, 0.0346f, stream_.get());
      return;
    }
    const bool norm = prm.tensor.find("norm") != std::string::npos;
    if (b.dtype == DType::F32) {
      compiled::fill_f32(dst.as<float>(), n, norm ? 1.f : 0.f, stream_.get());
    } else {
      std::vector<uint16_t> h(n, f32_to_bf16(norm ? 1.f : 0.f));
      dst.upload(h.data(), h.size() * 2);
    }
  }

  void launch_kernel(int32_t kernel, const std::vector<int32_t>& buffers, int64_t layer, int64_t blocks, int32_t block,
                     int64_t T) {
    long t = static_cast<long>(T), l = static_cast<long>(layer);
    std::vector<void*> args;
    for (int32_t b : buffers) args.push_back(&ptrs_[static_cast<size_t>(b)]);
    if (layer >= 0) args.push_back(&l);
    args.push_back(&t);
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(blocks));
    cfg.blockDim = dim3(static_cast<unsigned>(block));
    cfg.stream = stream_.get();
    // Every emitted kernel starts with griddepcontrol.wait, so each launch may overlap the
    // previous one's tail (programmatic dependent launch; LG_COMPILED_PDL=0 turns it off).
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl_ ? 1 : 0;
    LG_CUDA_CHECK(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(kernels_[static_cast<size_t>(kernel)]),
                                      args.data()));
  }

  void launch_one(const emit::cuda::LaunchPlan& l, int64_t T) {
    if (T == 1 && gemv_max_blocks_ > 0 && l.gemm) {
      // As many rounds of outputs per warp as the cap needs, and the blocks that many rounds need:
      // QKV's 768 blocks of outputs become 384 blocks doing two each rather than 528 of which
      // 45% do a second (fewer prologues, the same rounds).
      // H200, 8B decode, one call: 5.089 ms against 5.135 capped at 528 blocks.
      const int64_t blocks = l.grid(T), rounds = (blocks + gemv_max_blocks_ - 1) / gemv_max_blocks_;
      return launch_kernel(l.kernel, l.args, l.layer, (blocks + rounds - 1) / rounds, l.block, T);
    }
    if (T == 1 || !l.prefill) return launch_kernel(l.kernel, l.args, l.layer, l.grid(T), l.block, T);
    // Prefill: GEMMs pack their activations as bf16, run cuBLASLt on the tensor cores, then their
    // epilogue; attention runs the flash-attention kernel (no packs, no GEMMs).
    const auto& pf = *l.prefill;
    auto elementwise_grid = [](int64_t n) { return std::clamp<int64_t>((n + 255) / 256, 1, 4096); };
    auto mark = [&](const std::string& part) {
      if (mark_) mark_(part.c_str());
    };
    for (size_t i = 0; i < pf.packs.size(); ++i) {
      const auto& pk = pf.packs[i];
      launch_kernel(pk.kernel, pk.args, pk.layer, elementwise_grid(T * pk.K), 256, T);
      mark(".pack" + std::to_string(i));
    }
    for (const auto& gm : pf.gemms) {
      const auto* a = static_cast<const __nv_bfloat16*>(ptrs_[static_cast<size_t>(gm.a)]);
      const auto* w = static_cast<const __nv_bfloat16*>(ptrs_[static_cast<size_t>(gm.w)]);
      auto* out = static_cast<float*>(ptrs_[static_cast<size_t>(gm.out)]);
      const int t = static_cast<int>(T), n = static_cast<int>(gm.N), k = static_cast<int>(gm.K);
      if (gm.c >= 0)
        gemm_.matmul_add(a, w, static_cast<const float*>(ptrs_[static_cast<size_t>(gm.c)]), out, t, n, k, stream_.get());
      else
        gemm_.matmul(a, w, out, t, n, k, false, stream_.get());
      mark(".gemm");
    }
    if (pf.epilogue_kernel < 0) return;
    int64_t blocks = 0;
    if (pf.t_tile > 0) {
      blocks = (T + pf.t_tile - 1) / pf.t_tile * pf.work_const.at(0);
    } else {
      int64_t work = 0;
      for (size_t i = 0; i < pf.work_const.size(); ++i) {
        int64_t w = pf.work_const[i];
        for (int32_t k = 0; k < pf.work_t_power[i]; ++k) w *= T;
        work = std::max(work, w);
      }
      blocks = elementwise_grid(work);
    }
    launch_kernel(pf.epilogue_kernel, pf.epilogue_args, pf.epilogue_layer, blocks, pf.block, T);
    mark(pf.t_tile > 0 ? ".flash" : ".epilogue");
  }

  // The lane hands out the logits of the last position only, so at T > 1 the final launch (the
  // LM head, by far the largest GEMM of a prefill: V x D per row) may run for that row alone, as
  // a decode step on row T - 1 (as transformers' logits_to_keep=1). Allowed when that launch
  // writes the output and no state, and every buffer it touches is either independent of T or
  // laid out [T, ...] (row T - 1 then starts at a fixed offset).
  void find_last_row_launch(const lift::StagedProgram& staged) {
    const ir::Graph& g = staged.graph;
    if (prog_.launches.empty() || prog_.outputs.size() != 1) return;
    const auto li = static_cast<int32_t>(prog_.launches.size() - 1);
    const auto& l = prog_.launches.back();
    if (std::find(l.args.begin(), l.args.end(), prog_.outputs[0]) == l.args.end()) return;
    for (int32_t st : l.stages)
      for (ir::ValueId v : staged.stages[static_cast<size_t>(st)].nodes)
        if (g.at(v).op == ir::Op::StateWrite) return;
    std::vector<std::pair<int32_t, int64_t>> offsets;
    for (int32_t b : l.args) {
      const auto& buf = prog_.buffers[static_cast<size_t>(b)];
      if (buf.elems_t_power == 0) continue;
      const ir::Shape* shape = nullptr;
      if (buf.kind == BufferKind::Arena && buf.node >= 0) shape = &g.at(buf.node).shape;
      if (buf.kind == BufferKind::Input) shape = &g.inputs[static_cast<size_t>(buf.index)].shape;
      if (!shape || shape->empty() || (*shape)[0].is_const() || (*shape)[0].coeff != 1 || buf.elems_t_power != 1)
        return;
      offsets.push_back({b, buf.elems_const * static_cast<int64_t>(dtype_size(buf.dtype))});
    }
    last_row_launch_ = li;
    last_row_offsets_ = std::move(offsets);
  }

  void shift_rows(int64_t rows) {
    for (auto [b, row_bytes] : last_row_offsets_) {
      void*& ptr = ptrs_[static_cast<size_t>(b)];
      ptr = static_cast<char*>(ptr) + rows * row_bytes;
    }
  }

  void launch_at(size_t i, int64_t T) {
    const auto& l = prog_.launches[i];
    if (T == 1 || static_cast<int32_t>(i) != last_row_launch_) return launch_one(l, T);
    shift_rows(T - 1);
    launch_kernel(l.kernel, l.args, l.layer, l.grid(1), l.block, 1);
    shift_rows(-(T - 1));
  }

  void launch_all(int64_t T) {
    for (size_t i = 0; i < prog_.launches.size(); ++i) launch_at(i, T);
  }

  // LG_PROFILE_LAUNCHES=1: the second step of each T (the first pays for lazy module loading and
  // cuBLASLt's set-up) is run once more beforehand with an event around every launch; stderr gets
  // the time per kernel, summed over its launches, largest first. The KV cache is rewritten by the
  // real step that follows.
  void profile(int64_t T) {
    cudaStream_t s = stream_.get();
    // One event after every kernel: a prefill launch's packs, GEMMs and epilogue are timed apart
    // (labelled kernel.part), through mark_, which launch_one calls after each of them.
    std::vector<std::unique_ptr<cuda::Event>> ev;
    std::vector<std::string> label;
    std::string current;
    auto record = [&](const std::string& part) {
      ev.push_back(std::make_unique<cuda::Event>());
      ev.back()->record(s);
      label.push_back(current + part);
    };
    record("");
    mark_ = [&](const char* part) { record(part); };
    std::map<std::string, int32_t> launch_of;  // label -> its first launch
    for (size_t i = 0; i < prog_.launches.size(); ++i) {
      current = prog_.kernels[static_cast<size_t>(prog_.launches[i].kernel)].name;
      const size_t before = ev.size();
      launch_at(i, T);
      if (ev.size() == before) record("");
      for (size_t j = before; j < ev.size(); ++j) launch_of.try_emplace(label[j], static_cast<int32_t>(i));
    }
    mark_ = nullptr;
    stream_.synchronize();
    std::map<std::string, std::pair<double, int>> per_kernel;
    double total = 0;
    for (size_t j = 1; j < ev.size(); ++j) {
      const double ms = ev[j]->elapsed_ms_since(*ev[j - 1]);
      auto& [sum, n] = per_kernel[label[j]];
      sum += ms;
      ++n;
      total += ms;
    }
    std::vector<std::pair<double, std::string>> order;
    for (auto& [k, v] : per_kernel) order.push_back({v.first, k});
    std::sort(order.rbegin(), order.rend());
    std::fprintf(stderr, "profile T=%ld: %zu launches, %zu kernels run, %.3f ms (events between kernels, no graph)\n",
                 static_cast<long>(T), prog_.launches.size(), ev.size() - 1, total);
    for (size_t i = 0; i < order.size() && i < 16; ++i) {
      const auto& [ms, k] = order[i];
      const auto& l = prog_.launches[static_cast<size_t>(launch_of.at(k))];
      std::fprintf(stderr, "  %8.3f ms %5.1f%%  %-24s x%-3d launch grid %ld x %d\n", ms, 100 * ms / total, k.c_str(),
                   per_kernel[k].second, static_cast<long>(l.grid(T)), l.block);
    }
  }

  int64_t max_seq_ = 0, vocab_ = 0;
  bool tokens_is_first_ = true;
  emit::cuda::CudaProgram prog_;
  std::vector<cudaLibrary_t> libs_;
  std::vector<cudaKernel_t> kernels_;
  bool profile_ = false, pdl_ = true;
  /// Set by profile() only: called after each kernel of a prefill launch with its part's label.
  std::function<void(const char*)> mark_;
  int64_t gemv_max_blocks_ = 0;  ///< blocks per SM x SMs; 0: uncapped
  std::map<int64_t, int> steps_seen_;  ///< per T: profiling waits for the second step of a T
  cuda::DeviceBuffer arena_;
  std::vector<cuda::DeviceBuffer> owned_;
  std::vector<void*> ptrs_;
  std::vector<int32_t*> input_ptr_;
  cuda::Stream stream_;
  cuda::GraphExec graph_;
  cuda::LtGemm gemm_;
  cuda::DeviceBuffer argmax_;      ///< int: the greedy token of the last step
  int32_t last_row_launch_ = -1;   ///< see find_last_row_launch
  std::vector<std::pair<int32_t, int64_t>> last_row_offsets_;  ///< (buffer, bytes per row of T)
  int32_t* pinned_ = nullptr;      ///< host: tokens [max_t], positions [max_t], argmax [1]
};

}  // namespace

std::unique_ptr<Lane> make_compiled_lane(const model::ModelDir& dir, int64_t max_seq) {
  return std::make_unique<CompiledLane>(runtime::forward_graph(dir, max_seq), &dir.checkpoint, 0);
}

std::unique_ptr<Lane> make_compiled_lane_random(const model::ModelConfig& config, uint64_t seed, int64_t max_seq) {
  return std::make_unique<CompiledLane>(runtime::forward_graph(config, max_seq), nullptr, seed);
}

}  // namespace lg
