#include "lanes/compiled/compiled_lane.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "emit/cuda/nvrtc.h"
#include "emit/cuda/program.h"
#include "lift/lift.h"
#include "lift/passes.h"
#include "model/model_dir.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/forward_graph.h"
#include "support/error.h"

namespace lg {

namespace {

using emit::cuda::BufferKind;

void progress(const std::string& msg) {
  if (isatty(STDERR_FILENO)) std::cerr << "\r\033[K" << msg << std::flush;
}

class CompiledLane : public Lane {
 public:
  CompiledLane(const model::ModelDir& dir, int64_t max_seq) {
    if (!cuda::cuda_device_available()) throw Error("compiled lane: no CUDA device");
    auto fg = runtime::forward_graph(dir, max_seq);
    max_seq_ = fg.max_seq;
    lift::StagedProgram staged = lift::lift(fg.graph);
    lift::fuse(staged);
    prog_ = emit::cuda::emit_program(staged);
    const ir::Graph& g = staged.graph;
    progress("compiled lane: compiling " + std::to_string(prog_.kernels.size()) + " kernels with NVRTC...");
    bool hit = false;
    cubin_ = emit::cuda::nvrtc_compile_cached(prog_.source(), g.model, "sm_90", &hit);
    LG_CUDA_CHECK(cudaLibraryLoadData(&lib_, cubin_.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    for (const auto& k : prog_.kernels) {
      cudaKernel_t kern;
      LG_CUDA_CHECK(cudaLibraryGetKernel(&kern, lib_, k.name.c_str()));
      kernels_.push_back(kern);
    }
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
        progress("compiled lane: uploading weights " + std::to_string(++done) + "/" + std::to_string(g.params.size()));
        const std::string& tensor = g.params[static_cast<size_t>(b.index)].tensor;
        const auto& info = dir.checkpoint.info(tensor);
        if (b.dtype == DType::BF16 && info.dtype == DType::BF16) {
          auto bytes = dir.checkpoint.bytes(tensor);
          owned_.back().upload(bytes.data(), bytes.size());
        } else {
          std::vector<float> f = dir.checkpoint.to_f32(tensor);
          if (b.dtype == DType::BF16) {
            std::vector<uint16_t> h(f.size());
            for (size_t j = 0; j < f.size(); ++j) h[j] = f32_to_bf16(f[j]);
            owned_.back().upload(h.data(), h.size() * 2);
          } else {
            owned_.back().upload(f.data(), f.size() * 4);
          }
        }
      }
    }
    for (const auto& in : g.inputs)
      if (in.name != "tokens" && in.name != "pos")
        throw Error("compiled lane: the forward takes input `" + in.name + "`; the lane feeds tokens and pos");
    tokens_is_first_ = g.inputs.at(0).name == "tokens";
    vocab_ = g.at(g.outputs.at(0)).shape.back().coeff;
    progress("");
  }

  ~CompiledLane() override {
    graph_.reset();
    if (lib_) cudaLibraryUnload(lib_);
  }

  std::string name() const override { return "compiled"; }
  Provenance provenance() const override { return Compiled{}; }
  int64_t max_seq() const override { return max_seq_; }

  StepResult step(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) override {
    if (tokens.empty()) throw Error("compiled lane: empty step");
    auto T = static_cast<int64_t>(tokens.size());
    if (start_pos < 0 || start_pos + T > max_seq_)
      throw Error("compiled lane: positions " + std::to_string(start_pos) + ".." + std::to_string(start_pos + T - 1) +
                  " exceed the KV cache of " + std::to_string(max_seq_));
    std::vector<int32_t> pos(tokens.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(start_pos + static_cast<int64_t>(i));
    int32_t* dtok = input_ptr_[tokens_is_first_ ? 0 : 1];
    int32_t* dpos = input_ptr_[tokens_is_first_ ? 1 : 0];
    cudaStream_t s = stream_.get();
    LG_CUDA_CHECK(cudaMemcpyAsync(dtok, tokens.data(), tokens.size() * 4, cudaMemcpyHostToDevice, s));
    LG_CUDA_CHECK(cudaMemcpyAsync(dpos, pos.data(), pos.size() * 4, cudaMemcpyHostToDevice, s));
    if (T == 1) {
      if (!graph_.ready()) {
        graph_.begin_capture(s);
        launch_all(1);
        graph_.end_capture(s);
      }
      graph_.launch(s);
    } else {
      launch_all(T);
    }
    std::vector<float> row(static_cast<size_t>(vocab_));
    const auto& out = prog_.buffers[static_cast<size_t>(prog_.outputs.at(0))];
    const char* src = static_cast<const char*>(ptrs_[static_cast<size_t>(prog_.outputs[0])]) + (T - 1) * vocab_ * 4;
    (void)out;
    LG_CUDA_CHECK(cudaMemcpyAsync(row.data(), src, row.size() * 4, cudaMemcpyDeviceToHost, s));
    stream_.synchronize();
    StepResult r;
    r.argmax = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    if (want_logits) r.logits = std::move(row);
    return r;
  }

  void reset() override {
    for (size_t i = 0; i < prog_.buffers.size(); ++i)
      if (prog_.buffers[i].kind == BufferKind::State)
        LG_CUDA_CHECK(cudaMemset(ptrs_[i], 0, static_cast<size_t>(prog_.buffers[i].bytes)));
  }

 private:
  void launch_all(int64_t T) {
    long t = static_cast<long>(T);
    for (const auto& l : prog_.launches) {
      std::vector<void*> args;
      for (int32_t b : l.args) args.push_back(&ptrs_[static_cast<size_t>(b)]);
      args.push_back(&t);
      dim3 grid(static_cast<unsigned>(l.grid(T))), block(static_cast<unsigned>(l.block));
      LG_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernels_[static_cast<size_t>(l.kernel)]), grid, block,
                                     args.data(), 0, stream_.get()));
    }
  }

  int64_t max_seq_ = 0, vocab_ = 0;
  bool tokens_is_first_ = true;
  emit::cuda::CudaProgram prog_;
  std::vector<char> cubin_;
  cudaLibrary_t lib_ = nullptr;
  std::vector<cudaKernel_t> kernels_;
  cuda::DeviceBuffer arena_;
  std::vector<cuda::DeviceBuffer> owned_;
  std::vector<void*> ptrs_;
  std::vector<int32_t*> input_ptr_;
  cuda::Stream stream_;
  cuda::GraphExec graph_;
};

}  // namespace

std::unique_ptr<Lane> make_compiled_lane(const model::ModelDir& dir, int64_t max_seq) {
  return std::make_unique<CompiledLane>(dir, max_seq);
}

}  // namespace lg
