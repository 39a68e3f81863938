#include "lanes/compiled/compiled_lane.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "emit/cuda/compile.h"
#include "emit/cuda/nvrtc_program.h"
#include "emit/cuda/program.h"
#include "lanes/compiled/device_ops.h"
#include "lanes/compiled/launcher.h"
#include "lanes/compiled/step_inputs.h"
#include "lanes/compiled/weights.h"
#include "ir/batch.h"
#include "model/model_dir.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/row_draws.h"
#include "runtime/cuda/step_times.h"
#include "runtime/cuda/pinned_upload.h"
#include "runtime/forward_graph.h"
#include "support/error.h"
#include "support/startup_clock.h"

namespace lg {

namespace {

using emit::cuda::BufferKind;

void progress(const std::string& msg) {
  if (isatty(STDERR_FILENO)) std::cerr << "\r\033[K" << msg << std::flush;
}

class CompiledLane : public Lane {
 public:
  /// `ckpt` null: random weights from `seed` (matrices uniform with std 0.02, transformers'
  /// initializer_range; 1-D norm weights 1, other 1-D params 0, as a fresh HF model). `clock` has
  /// timed the lowering; the lane marks its own phases on it (LG_STARTUP_TIMES).
  CompiledLane(runtime::ForwardGraph fg, const model::Checkpoint* ckpt, uint64_t seed, const LaneOptions& options,
               StartupClock& clock) {
    if (!cuda::cuda_device_available()) throw Error("compiled lane: no CUDA device");
    if (const auto problem = runtime::forward_inputs_problem(fg.graph))
      throw Error("compiled lane: the forward " + *problem);
    limits_ = resolve_limits(options, fg.max_seq, default_pool(fg, options));
    // One block more than the scheduler hands out: the pad rows of a decode graph's bucket write
    // and read only it (step_inputs.h).
    pad_block_ = static_cast<int32_t>(limits_.num_blocks);
    ir::make_batched(fg.graph, {limits_.block_size, limits_.num_blocks + 1, limits_.max_batch, limits_.max_tokens});
    emit::cuda::CompileOptions opts;
    opts.arch = cuda::device_arch();
    // The KV pool in bf16 (the .lg's f32 cache is the reference's; the locks check this lane).
    opts.emit.bf16_states = true;
    opts.clock = &clock;
    emit::cuda::Compilation comp = emit::cuda::compile(fg.graph, opts);
    prog_ = std::move(comp.program);
    launches_per_layer_ = emit::cuda::layer_launches(comp).per_layer;
    staged_ = std::move(comp.staged);
    const lift::StagedProgram& staged = staged_;
    const ir::Graph& g = staged.graph;
    compile_kernels(comp.arch, clock);
    // Buffers: weights uploaded once, states zeroed, inputs and the arena allocated.
    arena_ = cuda::DeviceBuffer(static_cast<size_t>(std::max<int64_t>(prog_.arena_bytes, 256)));
    ptrs_.resize(prog_.buffers.size());
    std::unique_ptr<cuda::PinnedUploader> uploader;
    if (ckpt) uploader = std::make_unique<cuda::PinnedUploader>();
    size_t done = 0;
    for (size_t i = 0; i < prog_.buffers.size(); ++i) {  // allocations, stacked weights' first
      const auto& b = prog_.buffers[i];
      if (b.kind == BufferKind::Arena) {
        ptrs_[i] = static_cast<char*>(arena_.data()) + b.offset;
      } else if (b.stack < 0) {
        owned_.emplace_back(static_cast<size_t>(std::max<int64_t>({b.bytes, b.stack_bytes, 16})));
        ptrs_[i] = owned_.back().data();
      }
    }
    for (size_t i = 0; i < prog_.buffers.size(); ++i) {
      const auto& b = prog_.buffers[i];
      if (b.kind == BufferKind::Arena) continue;
      if (b.stack >= 0) ptrs_[i] = static_cast<char*>(ptrs_[static_cast<size_t>(b.stack)]) + b.stack_offset;
      // Inputs too: the step-input mirror starts out all zero (step_inputs.h).
      if (b.kind == BufferKind::State || b.kind == BufferKind::Input)
        cuda::memset_device_now(ptrs_[i], 0, static_cast<size_t>(b.bytes));
      if (b.kind == BufferKind::Input) input_of_[g.inputs[static_cast<size_t>(b.index)].name] = static_cast<int32_t*>(ptrs_[i]);
      if (b.kind == BufferKind::Weight) {
        progress("compiled lane: " + std::string(ckpt ? "uploading" : "making random") + " weights " +
                 std::to_string(++done) + "/" + std::to_string(g.params.size()));
        const ir::ParamInfo& prm = g.params[static_cast<size_t>(b.index)];
        if (ckpt) compiled::upload_weight(*ckpt, prm, b, ptrs_[i], *uploader, stream_.get());
        else compiled::random_weight(prm, b, ptrs_[i], seed, stream_.get());
      }
    }
    // The step's inputs in StepInput order, found once by name.
    for (size_t k = 0; k < kStepInputs.size(); ++k) {
      const auto it = input_of_.find(kStepInputs[k]);
      if (it == input_of_.end())
        throw Error(std::string("compiled lane: internal error: no input buffer `") + kStepInputs[k] + "`");
      input_dev_[k] = it->second;
    }
    vocab_ = g.at(g.outputs.at(0)).shape.back().coeff;
    argmax_ = cuda::DeviceBuffer(static_cast<size_t>(limits_.max_batch) * sizeof(int32_t));
    draws_ = std::make_unique<cuda::RowDraws>(limits_.max_batch);
    // Pinned staging of one step's inputs (what StepInputMirror plans to copy) and of the
    // argmaxes that come back.
    mirror_ = std::make_unique<compiled::StepInputMirror>(limits_.max_tokens, limits_.max_batch, limits_.blocks_per_seq());
    staging_size_ = static_cast<size_t>(mirror_->staging_elems() + limits_.max_batch);
    LG_CUDA_CHECK(cudaMallocHost(&pinned_, staging_size_ * sizeof(int32_t)));
    launcher_ = std::make_unique<compiled::Launcher>(prog_, kernels_, ptrs_, stream_.get());
    if (uploader) uploader->finish();
    stream_.synchronize();
    if (uploader) {
      const double gb = static_cast<double>(uploader->bytes()) / 1e9;
      char note[96];
      std::snprintf(note, sizeof note, "%.2f GB through pinned staging, %.1f GB/s", gb, gb / std::max(clock.lap(), 1e-9));
      clock.mark("weight upload", note);
    } else {
      clock.mark("random weights");
    }
    progress("");
    profile_ = std::getenv("LG_PROFILE_LAUNCHES") != nullptr;
  }

  ~CompiledLane() override {
    graphs_.clear();
    if (pinned_) cudaFreeHost(pinned_);
    for (cudaLibrary_t lib : libs_) cudaLibraryUnload(lib);
  }

  std::string name() const override { return "compiled"; }
  Provenance provenance() const override { return Compiled{}; }
  const LaneLimits& limits() const override { return limits_; }
  /// Sampled and penalised picks run on the device (runtime/cuda/row_draws.h): the logits rows
  /// stay there.
  bool draws() const override { return true; }
  LaneFacts facts() const override {
    LaneFacts f;
    f.launches_per_decode_layer = launches_per_layer_;
    return f;
  }

  std::vector<SeqResult> step(std::span<const SeqStep> batch) override {
    times_.begin(stream_.get());
    const FlatBatch f = flatten(batch, limits_);
    for (size_t t = 0; t < f.tokens.size(); ++t)
      if (f.tokens[t] < 0 || f.tokens[t] >= vocab_)
        throw Error("compiled lane: sequence " + std::to_string(f.seq[t]) + " of the step has token id " +
                    std::to_string(f.tokens[t]) + ", outside the vocabulary of " + std::to_string(vocab_));
    draws_->check(batch, vocab_);
    cudaStream_t s = stream_.get();
    // A step of one decode token per sequence replays the CUDA graph of its bucket (B padded up
    // to a power of two, at most max_batch; step_inputs.h says what the pad rows are); a step
    // with a prefill chunk runs the plan for its own T and B.
    const bool decode = f.T == f.B;
    const int64_t rows = decode ? bucket_of(f.B) : f.T;
    // Pinned staging: cudaMemcpyAsync from pageable memory is staged through a driver buffer and
    // is not asynchronous; from pinned memory it is a plain DMA. Only what differs from what the
    // device holds is copied: a decode step sends its tokens and positions, and a block-table
    // entry when a sequence enters a new block.
    copy_inputs(f, decode, rows);
    const int64_t B = decode ? rows : f.B;
    if (profile_ && ++steps_seen_[{rows, B}] == 2) launcher_->profile(rows, B);
    // Not const: a penalised draw edits its row in place (RowDraws::launch).
    float* logits = static_cast<float*>(ptrs_[static_cast<size_t>(prog_.outputs[0])]);
    const bool pdl = launcher_->pdl();  // the argmax follows the program's launches
    const auto graph = decode ? graphs_.find(rows) : graphs_.end();
    if (graph != graphs_.end()) {
      // The bucket's second step captures its graph, every later one replays it.
      if (!graph->second.ready()) {
        graph->second.begin_capture(s);
        launcher_->launch_all(rows, rows);
        compiled::argmax(logits, static_cast<long>(vocab_), argmax_.as<int>(), s, static_cast<int>(rows), pdl);
        graph->second.end_capture(s);
      }
      graph->second.launch(s);
    } else if (decode) {
      // A bucket's first step runs as launched, so that what is set up at a first use (cuBLASLt's
      // algorithm choice for these rows, lazily loaded modules) is never inside a capture.
      graphs_.try_emplace(rows);
      launcher_->launch_all(rows, rows);
      compiled::argmax(logits, static_cast<long>(vocab_), argmax_.as<int>(), s, static_cast<int>(rows), pdl);
    } else {
      launcher_->launch_all(f.T, f.B);
      compiled::argmax(logits, static_cast<long>(vocab_), argmax_.as<int>(), s, static_cast<int>(f.B), pdl);
    }
    draws_->launch(logits, vocab_, batch, s);
    times_.end_launches(s);
    int32_t* hargmax = pinned_ + mirror_->staging_elems();
    LG_CUDA_CHECK(cudaMemcpyAsync(hargmax, argmax_.data(), static_cast<size_t>(f.B) * sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, s));
    std::vector<SeqResult> out(batch.size());
    for (size_t b = 0; b < batch.size(); ++b) {
      if (!batch[b].want_logits) continue;
      out[b].logits.resize(static_cast<size_t>(vocab_));
      LG_CUDA_CHECK(cudaMemcpyAsync(out[b].logits.data(), logits + static_cast<int64_t>(b) * vocab_,
                                    out[b].logits.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
    }
    stream_.synchronize();
    times_.done(f.T, f.B);
    for (size_t b = 0; b < batch.size(); ++b) out[b].argmax = hargmax[b];
    draws_->collect(batch, out);
    return out;
  }

  /// probe_compiled_step (compiled_lane.h): the step launch by launch, each launch's stored values
  /// read back after it (no CUDA graph, so the launches are those step() would run or capture).
  ProbedStep probe(std::span<const SeqStep> batch) {
    const FlatBatch f = flatten(batch, limits_);
    const bool decode = f.T == f.B;
    const int64_t rows = decode ? bucket_of(f.B) : f.T, B = decode ? rows : f.B;
    const ir::Graph& g = staged_.graph;
    ProbedStep out;
    out.symbols = {rows, B};
    if (g.symbols.size() != 2) throw Error("compiled lane: internal error: a batched graph without the symbols T, B");
    auto count = [&](const ir::Shape& shape) {
      int64_t n = 1;
      for (const ir::Dim& d : shape) n *= d.coeff * (d.sym < 0 ? 1 : out.symbols.at(static_cast<size_t>(d.sym)));
      return static_cast<size_t>(n);
    };
    auto read = [&](int32_t buffer, size_t n) {
      const auto& b = prog_.buffers[static_cast<size_t>(buffer)];
      std::vector<float> v(n);
      if (b.dtype == DType::BF16) {
        std::vector<uint16_t> h(n);
        LG_CUDA_CHECK(cudaMemcpy(h.data(), ptrs_[static_cast<size_t>(buffer)], n * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) v[i] = bf16_to_f32(h[i]);
      } else if (b.dtype == DType::F32) {
        LG_CUDA_CHECK(cudaMemcpy(v.data(), ptrs_[static_cast<size_t>(buffer)], n * 4, cudaMemcpyDeviceToHost));
      } else {
        throw Error("compiled lane: probe: buffer `" + b.name + "` of dtype " + std::string(dtype_name(b.dtype)));
      }
      return v;
    };
    copy_inputs(f, decode, rows);
    stream_.synchronize();
    std::map<ir::ValueId, int32_t> arena_of;
    out.inputs.resize(g.inputs.size());
    out.states.resize(g.states.size());
    for (size_t i = 0; i < prog_.buffers.size(); ++i) {
      const auto& b = prog_.buffers[i];
      const auto id = static_cast<int32_t>(i);
      if (b.kind == BufferKind::Arena) arena_of[b.node] = id;
      if (b.kind == BufferKind::Input) {
        const size_t n = count(g.inputs[static_cast<size_t>(b.index)].shape);
        auto& in = out.inputs[static_cast<size_t>(b.index)];
        in.resize(n);
        LG_CUDA_CHECK(cudaMemcpy(in.data(), ptrs_[i], n * 4, cudaMemcpyDeviceToHost));
      }
      if (b.kind == BufferKind::State)
        out.states[static_cast<size_t>(b.index)] = read(id, count(g.states[static_cast<size_t>(b.index)].shape));
    }
    for (size_t i = 0; i < prog_.launches.size(); ++i) {
      launcher_->launch_at(i, rows, B);
      stream_.synchronize();
      for (int32_t st : prog_.launches[i].stages)
        for (ir::ValueId v : staged_.stages[static_cast<size_t>(st)].stores) {
          const auto it = arena_of.find(v);
          if (it == arena_of.end()) continue;  // a state written in place
          out.values.push_back({static_cast<int32_t>(i), v, read(it->second, count(g.at(v).shape))});
        }
    }
    return out;
  }

  const lift::StagedProgram& staged() const { return staged_; }
  const emit::cuda::CudaProgram& plan() const { return prog_; }

 private:
  /// Copies what the step's inputs change to the device input buffers (step_inputs.h), on the stream.
  void copy_inputs(const FlatBatch& f, bool decode, int64_t rows) {
    cudaStream_t s = stream_.get();
    const std::span<int32_t> staging(pinned_, static_cast<size_t>(mirror_->staging_elems()));
    const std::vector<compiled::InputCopy> copies =
        decode ? mirror_->plan_decode(f, rows, pad_block_, limits_.block_size, staging) : mirror_->plan(f, staging);
    for (const compiled::InputCopy& c : copies) {
      int32_t* dst = input_dev_[static_cast<size_t>(c.input)] + c.dst;
      const int32_t* src = pinned_ + c.src;
      if (c.height == 1)
        LG_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(c.width) * 4, cudaMemcpyHostToDevice, s));
      else
        LG_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<size_t>(c.pitch) * 4, src, static_cast<size_t>(c.width) * 4,
                                        static_cast<size_t>(c.width) * 4, static_cast<size_t>(c.height),
                                        cudaMemcpyHostToDevice, s));
    }
  }

  /// The decode graph bucket of a step of B sequences: the next power of two, at most max_batch.
  int64_t bucket_of(int64_t B) const {
    int64_t b = 1;
    while (b < B) b *= 2;
    return std::min(b, limits_.max_batch);
  }

  /// The default KV pool in positions: 90% of the device memory free now, less the weights and a
  /// reserve (activations, cuBLASLt, the CUDA context's growth), capped at max_batch * max_seq
  /// positions, and rounded down to a power-of-two count of blocks: the pool's size is a constant
  /// in the kernels (the NVRTC cache keys on their text), so a little more or less free memory
  /// must not make a program of its own. Throws lg::Error when it cannot hold one context.
  static int64_t default_pool(const runtime::ForwardGraph& fg, const LaneOptions& o) {
    const ir::Graph& g = fg.graph;
    int64_t per_position = 0, weights = 0;
    for (const auto& st : g.states) {
      int64_t n = 2;  // bf16
      for (const auto& d : st.shape) n *= d.coeff;
      per_position += n / fg.max_seq;
    }
    for (const auto& prm : g.params) {
      int64_t n = prm.dtype == DType::BF16 ? 2 : 4;
      for (const auto& d : prm.shape) n *= d.coeff;
      weights += n;
    }
    size_t free = 0, total = 0;
    LG_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    const int64_t reserve = int64_t{2} << 30;
    const int64_t avail = static_cast<int64_t>(0.9 * static_cast<double>(free)) - weights - reserve;
    const int64_t bs = std::max<int64_t>(o.block_size, 1);
    const int64_t cap = (o.max_batch > 0 ? o.max_batch : 256) * fg.max_seq;
    int64_t blocks = std::min(avail / std::max<int64_t>(per_position, 1), cap) / bs;
    if (blocks * bs < fg.max_seq)
      throw Error("compiled lane: the device has " + std::to_string(free >> 20) + " MiB free; the weights take " +
                  std::to_string(weights >> 20) + " MiB and one context of " + std::to_string(fg.max_seq) +
                  " tokens " + std::to_string((fg.max_seq * per_position) >> 20) +
                  " MiB of KV cache: use a smaller --max-seq or --kv-tokens");
    int64_t pow2 = 1;
    while (pow2 * 2 <= blocks) pow2 *= 2;
    return std::max(pow2 * bs, fg.max_seq);
  }

  // NVRTC compiles the kernels in chunks on every core (each kernel that instantiates the
  // flash-attention template takes seconds at -O3); each chunk is its own cached cubin and library.
  void compile_kernels(const std::string& arch, StartupClock& clock) {
    const size_t nk = prog_.kernels.size();
    const size_t threads = std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), 32));
    progress("compiled lane: compiling " + std::to_string(nk) + " kernels with NVRTC on " + std::to_string(threads) +
             " threads...");
    const std::vector<emit::cuda::CubinChunk> chunks = emit::cuda::nvrtc_compile_program(prog_, arch, threads);
    size_t hits = 0;
    for (const auto& c : chunks) hits += c.cache_hit;
    clock.mark("nvrtc", std::to_string(hits) + "/" + std::to_string(chunks.size()) + " units from the cache, " + arch);
    kernels_.resize(nk);
    for (const auto& c : chunks) {
      cudaLibrary_t lib = nullptr;
      LG_CUDA_CHECK(cudaLibraryLoadData(&lib, c.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
      libs_.push_back(lib);
      for (size_t k = c.first; k < c.first + c.count; ++k)
        LG_CUDA_CHECK(cudaLibraryGetKernel(&kernels_[k], lib, prog_.kernels[k].name.c_str()));
    }
    clock.mark("module load", std::to_string(chunks.size()) + " libraries");
  }

  LaneLimits limits_;
  int32_t pad_block_ = 0;  ///< the pool's extra block: decode graphs' pad rows use it alone
  cuda::StepTimes times_{"compiled lane"};  // LG_STEP_TIMES=1
  /// The batched program's step inputs (ir/batch.h), in compiled::StepInput order.
  static constexpr std::array<const char*, compiled::kStepInputCount> kStepInputs = {"tokens", "pos", "seq",
                                                                                     "block_table", "rows"};
  std::array<int32_t*, compiled::kStepInputCount> input_dev_{};  ///< their device buffers
  std::unique_ptr<compiled::StepInputMirror> mirror_;             ///< what those hold
  int64_t vocab_ = 0;
  int64_t launches_per_layer_ = 0;  ///< of the plan's decode launches (emit::cuda::layer_launches)
  emit::cuda::CudaProgram prog_;
  lift::StagedProgram staged_;  ///< what prog_ was emitted from (probe_compiled_step)
  std::vector<cudaLibrary_t> libs_;
  std::vector<cudaKernel_t> kernels_;
  bool profile_ = false;  ///< LG_PROFILE_LAUNCHES
  std::map<std::pair<int64_t, int64_t>, int> steps_seen_;  ///< per (T, B): profiling waits for the second
  cuda::DeviceBuffer arena_;
  std::vector<cuda::DeviceBuffer> owned_;
  std::vector<void*> ptrs_;
  std::map<std::string, int32_t*> input_of_;  ///< the device buffer of each input, by name
  cuda::Stream stream_;
  std::map<int64_t, cuda::GraphExec> graphs_;  ///< decode graphs by bucket (rows)
  /// The program's launches; declared after what it refers to (prog_, kernels_, ptrs_, stream_),
  /// so it is destroyed first.
  std::unique_ptr<compiled::Launcher> launcher_;
  cuda::DeviceBuffer argmax_;      ///< int: the greedy token of the last step
  std::unique_ptr<cuda::RowDraws> draws_;  ///< sampled sequences' draws from their logits rows
  int32_t* pinned_ = nullptr;      ///< host staging: a step's inputs, then its argmaxes
  size_t staging_size_ = 0;        ///< int32s in pinned_
};

}  // namespace

const lift::StagedProgram& compiled_lane_program(const Lane& lane) {
  const auto* c = dynamic_cast<const CompiledLane*>(&lane);
  if (!c) throw Error("compiled_lane_program: lane `" + lane.name() + "` is not the compiled lane");
  return c->staged();
}

const emit::cuda::CudaProgram& compiled_lane_plan(const Lane& lane) {
  const auto* c = dynamic_cast<const CompiledLane*>(&lane);
  if (!c) throw Error("compiled_lane_plan: lane `" + lane.name() + "` is not the compiled lane");
  return c->plan();
}

ProbedStep probe_compiled_step(Lane& lane, std::span<const SeqStep> batch) {
  auto* c = dynamic_cast<CompiledLane*>(&lane);
  if (!c) throw Error("probe_compiled_step: lane `" + lane.name() + "` is not the compiled lane");
  return c->probe(batch);
}

std::unique_ptr<Lane> make_compiled_lane(const model::ModelDir& dir, const LaneOptions& options) {
  StartupClock clock("compiled lane");
  runtime::ForwardGraph fg = runtime::forward_graph(dir, options.max_seq);
  clock.mark("lower", std::to_string(fg.graph.nodes.size()) + " nodes");
  return std::make_unique<CompiledLane>(std::move(fg), &dir.checkpoint, 0, options, clock);
}

std::unique_ptr<Lane> make_compiled_lane_random(const model::ModelConfig& config, uint64_t seed,
                                                const LaneOptions& options) {
  StartupClock clock("compiled lane");
  runtime::ForwardGraph fg = runtime::forward_graph(config, options.max_seq);
  clock.mark("lower", std::to_string(fg.graph.nodes.size()) + " nodes");
  return std::make_unique<CompiledLane>(std::move(fg), nullptr, seed, options, clock);
}

}  // namespace lg
