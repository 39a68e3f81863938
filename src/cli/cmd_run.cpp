// `lg run --model DIR --prompt TEXT`: generates text from a Hugging Face model directory on a
// lane (the CPU reference executor by default), streaming it as it is produced, then reports
// prefill speed, time to first token and decode speed on stderr.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <optional>
#include <random>

#include "cli/command.h"
#include "cli/first_signal.h"
#include "cli/lane_options.h"
#include "cli/numeric_checks.h"
#include "cli/token_id_args.h"
#include "lanes/factory.h"
#include "model/model_dir.h"
#include "runtime/forward_graph.h"
#include "runtime/generate.h"
#include "runtime/model_source.h"
#include "support/count_noun.h"
#include "support/error.h"
#include "support/startup_clock.h"
#include "support/text_input.h"
#include "tokenizer/model_fit.h"
#include "tokenizer/tokenizer.h"

namespace {

struct RunOpts {
  std::string model, prompt, prompt_file, device, lane;
  std::vector<std::string> prompt_ids;  // --prompt-ids: the prompt as token ids, the output as ids
  std::string program;  // --program FILE.lg
  bool no_echo = false;
  bool fallback_cpu = false;
  int64_t max_tokens = 128, max_seq = 0;
  std::optional<int64_t> top_k;  // --top-k; none: generation_config.json's
  bool max_tokens_given = false;  // --max-tokens on the command line, not its default
  std::optional<double> temperature, top_p;
  // vLLM's and llama.cpp's names; absent: generation_config.json's (repetition, min_p) or off.
  std::optional<double> repetition_penalty, presence_penalty, frequency_penalty, min_p;
  std::optional<uint64_t> seed;  // --seed; none: a random one
  bool quiet = false;
  lg::LaneOptions lane_options;
};

/// The prompt: --prompt's text, stdin for `--prompt -`, or the file of --file, byte for byte.
std::string read_prompt(const RunOpts& o) {
  if (!o.prompt_file.empty() || o.prompt == "-") {
    const bool stdin_ = o.prompt == "-" || o.prompt_file == "-";
    std::ifstream file;
    if (!stdin_) file = lg::open_text_input(o.prompt_file, "prompt file");
    return lg::read_text_input(stdin_ ? std::cin : file, stdin_ ? "standard input" : o.prompt_file);
  }
  return o.prompt;
}

double secs_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The GPU lane `lg run --device cuda` takes without --lane: compiled for a --program (the
/// hand-written lane runs none), else lg::default_gpu_lane of the model's config.json
/// (hand-written for the Qwen shapes it takes, else compiled); hand-written where there is no
/// config.json to read, whose absence ModelDir::open then names.
std::string default_cuda_lane(const RunOpts& o) {
  if (!o.program.empty()) return "compiled";
  const std::filesystem::path config = std::filesystem::path(o.model) / "config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(config, ec)) return "handwritten";
  return lg::default_gpu_lane(lg::model::load_config(config));
}

/// The lane `lg run` runs on: --lane, else the device's (cpu by default; on cuda
/// default_cuda_lane); the CPU reference with --fallback-cpu where a GPU lane has no device.
/// Throws lg::Error for a lane that does not run on --device or is unknown (before the model
/// loads).
std::string choose_lane(const RunOpts& o) {
  std::string lane_name = !o.lane.empty() ? o.lane : o.device == "cuda" ? default_cuda_lane(o) : "cpu";
  if (o.device == "cpu" && lg::is_gpu_lane(lane_name))
    throw lg::Error("lane '" + lane_name + "' runs on cuda, not on --device cpu");
  // Otherwise `--device cuda --lane cpu` would run on the CPU and report CPU speeds as asked-for cuda.
  if (o.device == "cuda" && !lg::is_gpu_lane(lane_name))
    throw lg::Error("lane '" + lane_name + "' runs on the CPU, not on --device cuda (use --lane compiled or handwritten)");
  // An unknown name is refused before the model loads, not after a loading line naming it.
  lg::check_lane_known(lane_name);
  if (o.fallback_cpu && lg::is_gpu_lane(lane_name) && !lg::cuda_available()) {
    std::fprintf(stderr, "lg: no CUDA device: falling back from lane %s to the CPU reference (--fallback-cpu)\n",
                 lane_name.c_str());
    lane_name = "cpu";
  }
  return lane_name;
}

/// The prompt's token ids. Throws lg::Error naming the prompt's source for bytes that are not
/// text, and for a prompt of no tokens or with an id outside the checkpoint's vocabulary.
std::vector<int32_t> encode_prompt(const RunOpts& o, const lg::tokenizer::Tokenizer& tok, const std::string& prompt_text,
                                   const lg::model::ModelDir& dir) {
  // A raw prompt gets the special tokens the model expects (Llama 3's <|begin_of_text|>, Gemma's
  // <bos>; none for Qwen), as transformers' tokenizer(prompt) and vLLM do.
  // A prompt's bytes that are not text (a binary file): the error names where they came from,
  // the file, standard input or --prompt.
  std::vector<int32_t> prompt;
  try {
    prompt = tok.encode_with_special_tokens(prompt_text);
  } catch (const lg::Error& e) {
    const bool stdin_ = o.prompt == "-" || o.prompt_file == "-";
    const std::string source = stdin_ ? "the prompt on standard input" : !o.prompt_file.empty() ? o.prompt_file : "--prompt";
    throw lg::Error(source + ": " + e.what());
  }
  if (prompt.empty()) throw lg::Error("the prompt encodes to no tokens");
  if (const auto id = lg::runtime::first_out_of_vocab(prompt, dir.vocab))
    throw lg::Error(fmt::format("the prompt has token id {}, outside the model's vocabulary of {} ids (vocab_size in "
                                "config.json): does tokenizer.json belong to this checkpoint?",
                                *id, dir.vocab));
  return prompt;
}

/// --prompt-ids' ids, each checked against the checkpoint's vocabulary (dir.vocab, the width of its
/// logits). Throws lg::Error naming the item (cli/token_id_args.h).
std::vector<int32_t> prompt_from_ids(const RunOpts& o, const lg::model::ModelDir& dir) {
  return lg::cli::parse_token_id_args(o.prompt_ids, "--prompt-ids", [&dir](int64_t id, const std::string& item) {
    if (id < 0 || id >= dir.vocab)
      throw lg::Error(fmt::format("--prompt-ids: id {} is outside the model's vocabulary of {} ids (vocab_size in "
                                  "config.json)",
                                  item, dir.vocab));
  });
}

/// Where a run's tokens go on stdout. Text: the prompt's text (unless --no-echo), then the
/// generated text as it streams, end-of-sequence tokens left out, byte for byte. Ids
/// (--prompt-ids): the prompt's ids (unless --no-echo), then every generated id as it comes, eos
/// included, space-separated, and a newline at the end; no tokenizer needed (`lg detokenize`
/// reads them back).
class RunOutput {
 public:
  RunOutput(const RunOpts& o, const lg::tokenizer::Tokenizer* tok, const std::vector<int32_t>& prompt,
            const std::string& prompt_text, const std::vector<int64_t>& eos_ids)
      : ids_(!o.prompt_ids.empty()), eos_ids_(eos_ids) {
    if (!ids_) {
      // Special tokens (tokenizer.json's added tokens marked "special") are not shown, as vLLM's
      // default skip_special_tokens leaves them out of the text.
      stream_.emplace(*tok, /*skip_special_tokens=*/true);
      stream_->prime(prompt);  // generated text continues the echoed prompt (keeps a SentencePiece "▁" space)
      if (!o.no_echo) std::fwrite(prompt_text.data(), 1, prompt_text.size(), stdout);
    } else if (!o.no_echo) {
      for (int32_t id : prompt) id_out(id);
    }
    std::fflush(stdout);
  }

  void token(int32_t id) {
    if (ids_) {
      id_out(id);
    } else {
      for (int64_t e : eos_ids_)
        if (e == id) return;  // end-of-sequence tokens stop generation; they are not text
      write(stream_->push(id));
    }
    std::fflush(stdout);
  }

  void finish() { write(ids_ ? "\n" : stream_->finish()); }

 private:
  void write(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }
  void id_out(int32_t id) { write((first_ ? "" : " ") + std::to_string(id)), first_ = false; }

  bool ids_, first_ = true;
  std::vector<int64_t> eos_ids_;
  std::optional<lg::tokenizer::StreamDecoder> stream_;
};

/// The KV positions this run needs for an n-token prompt: the context is the model's (or
/// --max-seq), and prompt plus generated tokens stay within it. Throws lg::Error for a --max-seq
/// past the model's context or a prompt that fills it; warns of a --max-tokens it cannot hold.
int64_t run_positions(const RunOpts& o, const lg::model::ModelDir& dir, int64_t n) {
  // The context is the model's (or --max-seq); the KV cache only needs room for this run.
  const int64_t context = o.max_seq > 0 ? o.max_seq : dir.context;
  if (context > dir.context)
    throw lg::Error(fmt::format("--max-seq {} exceeds the model's context of {} tokens ({})", context, dir.context,
                                lg::runtime::context_origin(dir)));
  // As lg serve and lg batch: a prompt that fills the context leaves no room to generate.
  if (auto e = lg::runtime::prompt_context_error(n, context, "the prompt")) throw lg::Error(*e);
  // An -n the context cannot hold is said, in lg serve's words, and generation stops at the end of
  // the context: -n is an upper bound here (its default of 128 too), and the run still does what
  // it can, as lg compile warns of a --max-seq past the model's context. lg serve and lg batch
  // refuse such a request instead (a 400, as vLLM): an API client cannot read a warning.
  if (o.max_tokens_given)
    if (auto e = lg::runtime::completion_context_error(n, o.max_tokens, context, "--max-tokens"))
      std::fprintf(stderr, "lg: warning: %s; generation stops at the end of the context%s\n", e->c_str(),
                   o.max_seq > 0 ? " (--max-seq)" : "");
  // Prompt and generated tokens together stay within the context, as lg serve and vLLM keep them
  // (a 511-token prompt at context 512 gives 1 token). The last generated token is never fed
  // back, so the KV cache holds one position less than the tokens: the scheduler stops with
  // "context" once it is full, i.e. at prompt + generated == context (it used to be one more).
  // Compared, not summed: -n may be near 2^63, where n + -n wrapped to a negative size.
  return (o.max_tokens >= context - n ? context : n + o.max_tokens) - 1;
}

/// The sampling of this run: the flags, else generation_config.json's defaults (temperature only
/// with do_sample, as transformers; top_k, top_p, min_p and repetition_penalty as vLLM takes them),
/// with a seed drawn when none is given.
lg::runtime::SamplingOptions run_sampling(const RunOpts& o, const lg::model::GenerationConfig& gc) {
  lg::runtime::SamplingOptions s;
  s.temperature = o.temperature.value_or(gc.do_sample ? gc.temperature : 0.0);
  // -1 is off, as 0 is (and as lg serve's and vLLM's top_k -1 is): it used to mean the config's.
  s.top_k = o.top_k ? std::max<int64_t>(*o.top_k, 0) : gc.top_k;
  s.top_p = o.top_p.value_or(gc.top_p);
  s.min_p = o.min_p.value_or(gc.min_p);
  s.penalties.repetition = o.repetition_penalty.value_or(gc.repetition_penalty);
  s.penalties.presence = o.presence_penalty.value_or(0.0);
  s.penalties.frequency = o.frequency_penalty.value_or(0.0);
  // Without --seed a sampled run draws its seed, as llama.cpp's and lg serve's requests do (vLLM's
  // too): the same command samples other text each time; the speed line names the seed, so that
  // --seed repeats a run. (A fixed default made every sampled run of a prompt the same.)
  std::random_device entropy;
  s.seed = o.seed ? *o.seed : (uint64_t{entropy()} << 32 | entropy());
  return s;
}

/// Set by the first SIGINT during generation (the handler then resets itself: a second one
/// terminates, as a stuck step would otherwise hold the terminal).
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_run_interrupt(int) { g_interrupted = 1; }

int run(RunOpts o) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string lane_name = choose_lane(o);
  const bool from_ids = !o.prompt_ids.empty();
  const std::string prompt_text = from_ids ? "" : read_prompt(o);
  if (!from_ids && prompt_text.empty())
    throw lg::Error("the prompt is empty: give --prompt some text (or -f FILE, or --prompt-ids)");
  // LG_STARTUP_TIMES=1: each start-up phase on stderr (the lanes add their own inside make_lane).
  lg::StartupClock startup("lg run");
  lg::model::ModelDir dir = lg::model::ModelDir::open(o.model);
  // The program's context and vocabulary; a checkpoint that does not fit its params (a config
  // from another size) is refused here rather than as a bad prompt id or a gather error. With
  // --max-seq, a program that binds only below its config's context binds at it (phi3.lg's
  // sliding_window).
  lg::runtime::resolve_program(dir, o.program, o.max_seq);
  startup.mark("open model directory", std::to_string(dir.checkpoint.names().size()) + " tensors");
  if (!dir.tokenizer_json && !from_ids)
    throw lg::Error(o.model + ": no tokenizer.json; lg run needs one to read the prompt (or give the prompt as "
                              "token ids: --prompt-ids)");
  std::optional<lg::tokenizer::Tokenizer> tok;
  if (dir.tokenizer_json) {
    tok.emplace(lg::tokenizer::Tokenizer::from_file(*dir.tokenizer_json));
    lg::tokenizer::warn_model_fit(*tok, *dir.tokenizer_json, dir.config.vocab_size);
    // Generation stops on the tokenizer's eos token too (tokenizer_config.json's), as in lg serve.
    lg::model::add_eos_token_id(dir.generation, tok->eos_id());
  }
  const std::vector<int32_t> prompt = from_ids ? prompt_from_ids(o, dir) : encode_prompt(o, *tok, prompt_text, dir);
  startup.mark("tokenizer");
  // generation_config.json's max_new_tokens is the default -n, as vLLM's default max_tokens.
  if (!o.max_tokens_given && dir.generation.max_new_tokens) o.max_tokens = *dir.generation.max_new_tokens;
  const auto n = static_cast<int64_t>(prompt.size());
  const int64_t max_seq = run_positions(o, dir, n);

  if (!o.quiet) {
    // The program that runs it: its name when it is a built-in one, else its path (--program, or
    // one found through $LG_MODELS_DIR), so a user sees which program their run read.
    const std::filesystem::path program = lg::runtime::program_source(dir);
    const auto builtin = lg::runtime::builtin_model_source_dirs();
    std::error_code ec;
    const bool is_builtin = std::any_of(builtin.begin(), builtin.end(), [&](const std::filesystem::path& d) {
      return std::filesystem::equivalent(d, program.parent_path(), ec);
    });
    std::fprintf(stderr, "lg: %s (%s, %.1fM params) on lane %s, %lld prompt token%s\n", o.model.c_str(),
                 (is_builtin ? program.filename() : program).c_str(),
                 static_cast<double>(dir.checkpoint.parameter_count()) / 1e6, lane_name.c_str(), static_cast<long long>(n),
                 n == 1 ? "" : "s");
  }
  lg::LaneOptions lane_options = o.lane_options;
  lane_options.max_seq = max_seq;
  // The lane would say "one context ... (--max-seq)", but here the context is the run's own.
  if (lane_options.kv_tokens > 0 && lane_options.kv_tokens < max_seq)
    throw lg::Error(fmt::format("a KV cache of {} (--kv-tokens) holds less than this run needs: {} positions for a "
                                "{}-token prompt and up to {} (--max-tokens); give at least {}, or a smaller --max-tokens",
                                lg::count_noun(lane_options.kv_tokens, "token"), max_seq, n,
                                lg::count_noun(o.max_tokens, "new token"), max_seq));
  auto lane = lg::make_lane(lane_name, dir, lane_options);
  startup.mark("make lane", lane->name());
  if (!o.quiet)
    std::fprintf(stderr, "lg: %s lane ready (%s) in %.2f s\n", lane->name().c_str(),
                 lg::to_string(lane->provenance()).c_str(), secs_since(t0));
  if (const std::string d = lg::model::sampling_defaults(dir.generation); !d.empty() && !o.quiet)
    std::fprintf(stderr, "lg: defaults from generation_config.json where no option sets them: %s\n", d.c_str());

  lg::runtime::GenerateOptions gen;
  gen.max_new_tokens = o.max_tokens;
  gen.eos_ids = dir.generation.eos_token_ids;
  // Sampling defaults come from generation_config.json; flags override.
  gen.sampling = run_sampling(o, dir.generation);
  RunOutput out(o, tok ? &*tok : nullptr, prompt, prompt_text, gen.eos_ids);
  int64_t produced = 0;
  gen.on_token = [&](int32_t id) {
    // The first steps pay for lazy module loading, cuBLASLt's set-up and a GPU lane's decode graph
    // capture; their lines wait for the end of the text (printed now, they landed inside it).
    if (produced < 2) {
      const bool first = produced++ == 0;
      startup.mark_later(first ? "first step (prefill, warm-up)" : "first decode step",
                         !first && lane->name() != "cpu" ? "decode graph capture" : "");
    }
    out.token(id);
  };
  // A write to stdout that failed (a full disk, a closed stdout) ends generation: the text is lost.
  // Ctrl-C (SIGINT) ends it at the next token with the speed line printed, as llama.cpp prints its
  // timings; a second one stops at once.
  lg::cli::on_first_signal(on_run_interrupt, {SIGINT});
  gen.should_stop = [] { return std::ferror(stdout) != 0 || g_interrupted != 0; };
  lg::runtime::Generation g;
  try {
    g = lg::runtime::generate(*lane, prompt, gen);
  } catch (const lg::Error&) {
    std::fflush(stdout);
    std::fputs("\n", stderr);  // the error starts a line of its own on a terminal
    throw;
  }
  out.finish();
  // Exit status 0 with the text not written (`lg run ... > out.txt` on a full disk) is a silent
  // loss: refused, as lg batch refuses a failed write of its results.
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    throw lg::Error("standard output: write failed: the generated text was not all written");
  const bool interrupted = g_interrupted != 0 && g.stats.stop == "caller";
  const auto& s = g.stats;
  const std::string seed_note = gen.sampling.temperature > 0 ? fmt::format(" | seed {}", gen.sampling.seed) : "";
  auto tokens = [](int64_t count) { return fmt::format("{} token{}", count, count == 1 ? "" : "s"); };
  std::fprintf(stderr,
               "\nlg: prefill %s in %.1f ms (%.1f tok/s) | time to first token %.1f ms | decode %s in "
               "%.1f ms (%.1f tok/s) | stop: %s%s\n",
               tokens(s.prompt_tokens).c_str(), s.prefill_s * 1e3, s.prefill_tokens_per_s(), s.first_token_s * 1e3,
               tokens(s.decode_steps).c_str(), s.decode_s * 1e3, s.decode_tokens_per_s(),
               interrupted ? "interrupted (SIGINT)" : s.stop.c_str(), seed_note.c_str());
  startup.flush();
  return interrupted ? 130 : 0;
}

}  // namespace

LG_COMMAND("run", [](CLI::App& app) {
  auto o = std::make_shared<RunOpts>();
  auto* sub = app.add_subcommand("run", "Generate text from a Hugging Face model directory, streaming it, then print speeds");
  lg::cli::add_model_options(sub, o->model, o->program);
  auto* prompt = sub->add_option("--prompt,-p", o->prompt, "prompt text ('-': read it from stdin, byte for byte: a trailing newline stays)");
  auto* file = sub->add_option("--file,-f", o->prompt_file, "read the prompt from a file ('-': stdin), byte for byte");
  auto* ids = sub->add_option("--prompt-ids", o->prompt_ids,
                              "the prompt as token ids (5 12 7, or 5,12,7; no tokenizer needed): stdout is then the "
                              "prompt's and the generated ids, space-separated, eos included")
                  ->expected(1, -1);
  prompt->excludes(file);
  ids->excludes(prompt)->excludes(file);
  sub->add_flag("--no-echo", o->no_echo, "print only the generated text, not the prompt before it");
  auto* max_tokens = sub->add_option("--max-tokens,-n", o->max_tokens, "new tokens to generate at most (default: "
                                     "generation_config.json's max_new_tokens, else 128; more than the context "
                                     "leaves after the prompt: a warning, and the context's end stops it)")
                         ->check(lg::cli::at_least_one());  // no "=128": the config's max_new_tokens comes first
  sub->add_option("--device", o->device, "cpu or cuda (default: the lane's device; cpu without --lane)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string { return s == "cpu" || s == "cuda" ? "" : "must be cpu or cuda, got '" + s + "'"; },
          "cpu|cuda"));
  sub->add_option("--lane", o->lane,
                  "lane by name (cpu, compiled, handwritten); default: cpu, or with --device cuda the model's "
                  "(handwritten for Qwen2/Qwen3 dense, else compiled)")
      ->check(lg::cli::lane_name());
  sub->add_flag("--fallback-cpu", o->fallback_cpu, "run the CPU reference when a GPU lane is asked for and there is no CUDA device");
  sub->add_option("--max-seq", o->max_seq, "context limit in tokens (default: max_position_embeddings)")->check(lg::cli::context_length());
  lg::cli::add_lane_options(sub, o->lane_options);
  // Sampling values are checked while parsing, before the model loads: inf/nan would turn every
  // probability into NaN or a uniform draw, and above 1000 the draw is uniform anyway.
  sub->add_option("--temperature,--temp", o->temperature, "0 = greedy (default: generation_config.json, else greedy)")
      ->check(lg::cli::finite_number_in(0, 1000));
  sub->add_option("--top-k", o->top_k,
                  "keep the k most likely tokens when sampling (0 or -1 = off, as vLLM; default: generation_config.json's, else off)")
      ->check(lg::cli::int_in_range(-1));
  sub->add_option("--top-p", o->top_p, "nucleus sampling threshold (1 = off; default: generation_config.json's, else 1)")
      ->check(lg::cli::finite_number_in(0, 1, true));
  sub->add_option("--min-p", o->min_p,
                  "when sampling, drop tokens less likely than min-p times the likeliest (0 = off; default: "
                  "generation_config.json's, else 0)")
      ->check(lg::cli::finite_number_in(0, 1));
  sub->add_option("--repetition-penalty", o->repetition_penalty,
                  "divide the positive logits of tokens in the prompt or the output by this, multiply the negative "
                  "ones (1 = off; greedy runs too; default: generation_config.json's, else 1)")
      ->check(lg::cli::positive_finite_number());
  sub->add_option("--presence-penalty", o->presence_penalty,
                  "subtract this from the logits of tokens already generated (0 = off)")
      ->check(lg::cli::finite_number_in(-2, 2));
  sub->add_option("--frequency-penalty", o->frequency_penalty,
                  "subtract this times its count so far from each generated token's logit (0 = off)")
      ->check(lg::cli::finite_number_in(-2, 2));
  sub->add_option("--seed", o->seed,
                  "seed of the sampler, in [-2^63, 2^64) as a request's (a negative one by its 64 bits; default: a "
                  "random one; a sampled run's speed line names it)")
      ->transform(lg::cli::seed_value());
  sub->add_flag("--quiet,-q", o->quiet, "no loading messages (speeds are still printed)");
  return [o, prompt, file, ids, max_tokens]() -> int {
    if (prompt->count() == 0 && file->count() == 0 && ids->count() == 0)
      throw lg::Error("lg run needs a prompt: --prompt TEXT, --prompt - (stdin), -f FILE or --prompt-ids IDS");
    o->max_tokens_given = max_tokens->count() > 0;
    return run(*o);
  };
});
