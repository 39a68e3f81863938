// The checker and lowering in one walk (internal to lg_lang). Declarations are bound against the
// config (dims, consts, dtypes, params, state), then the forward is evaluated statement by
// statement: compile-time values are folded, tensor expressions are type- and shape-checked and
// emitted as IR nodes, layers unrolled and fns inlined. An error yields an Error value that every
// later use accepts silently, so one mistake is reported once and independent ones are all
// reported. Checking is done per bound config because the config decides what the program is
// (tied embeddings, head_dim, bias present): see docs/language.md, "Why check per config".
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lang/lower.h"
#include "lang/program.h"
#include "lang/value.h"

namespace lg::lang {

/// Dims above this are rejected (declared, viewed, scaled or joined): no model has them, and
/// element counts must not overflow.
inline constexpr int64_t kMaxDim = int64_t{1} << 40;

class Elaborator {
 public:
  Elaborator(Program& program, const nlohmann::json& config, const BindOptions& opts, CheckReport& report);
  /// Binds the declarations and lowers the forward; errors go to program.diags.
  void run();

 private:
  struct ParamSlot {
    std::string name;  ///< display name: "embed", "l3.wq"
    Span span;
    bool ok = false;
    bool absent = false;
    DType dtype = DType::F32;
    ir::Shape shape;
    int32_t index = -1;      ///< into graph.params
    ir::ValueId node = -1;   ///< its Param node once used
  };
  struct StateSlot {
    std::string name;
    Span span;
    bool ok = false;
    DType dtype = DType::F32;
    ir::Shape shape;
    int32_t index = -1;
    ir::ValueId version = -1;  ///< latest version (State node or last StateWrite)
  };
  struct Frame {
    std::unordered_map<std::string, Value> vars;
    const FnDecl* fn = nullptr;  ///< set for an inlined fn (pure: no model names)
    Span call_span;
  };
  struct Arg {
    std::string name;
    Value value;
    Span span;
  };
  /// Thrown when the graph would exceed BindOptions::max_nodes.
  struct TooLarge {};

  // ---- declarations (bind.cpp)
  /// Binds the model's declarations in order (config requires first): globals, params, layers,
  /// states; errors go to the diagnostics, never thrown.
  void bind();
  /// S, the KV-cache capacity that bounds every runtime dim: --max-seq, else the program's own
  /// `S = ...` dim (bound where its dims block declares it), else config.max_position_embeddings.
  void bind_max_seq();
  /// One top-level declaration (a dim, const, dtype, param, layers block, state or require).
  void bind_decl(const Decl& d);
  /// A `layers l in lo..hi` block: its params bound once a layer, with `l` in scope.
  void bind_layers(const Decl& d);
  /// A `state` declaration: a tensor the step reads and writes (the KV cache), in declaration order.
  void bind_state(const Decl& d);
  /// Evaluates the model's top-level `require`s whose condition and message read nothing but the
  /// config (no dims, consts or params) before any other declaration; sets config_refused_ when
  /// one fails, and stops at a failed one that reads config.model_type. A program's
  /// `require (config.model_type ?? ...) == "..."` is thus the one error a config of another
  /// family gets, not the missing keys or unsupported fields that family names otherwise.
  void check_config_requires();
  void check_require(const Decl& d);
  /// A require's message (`message` null: none): its string into `out`, whether or not the
  /// condition holds, so that a message that is no string, or names nothing, is an error where it
  /// is written rather than on the config that fails the requirement. False when it is an error.
  bool require_message(const Expr* message, std::string& out);
  /// The expert range of an `experts e in lo..hi` block: its params are stacked over it.
  struct ExpertRange {
    std::string var;
    int64_t lo = 0, hi = 0;
  };
  void bind_param(const Decl& d, const std::string& display, int64_t layer, std::unordered_map<std::string, ParamSlot>& into,
                  const ExpertRange* experts = nullptr);
  std::optional<std::string> tensor_name(const Decl& d, const std::string& tmpl, int64_t layer, const ExpertRange* experts,
                                         std::vector<std::string>& parts);
  void bind_experts(const Decl& d, int64_t layer, std::unordered_map<std::string, ParamSlot>& into);
  bool eval_type(const TypeExpr& t, bool allow_runtime, DType& dtype, ir::Shape& shape);
  std::optional<DType> resolve_dtype(const std::string& name) const;
  void declare_global(const std::string& name, const Span& span, Value v);

  // ---- statements (lower.cpp)
  void lower_forward();
  /// Runs a block; returns the value of its `return` (Error if none or failed).
  Value exec_block(const std::vector<Stmt>& body, bool top_level_forward);
  void exec_let(const Stmt& s);
  void exec_write(const Stmt& s);
  bool write_state(const Stmt& s, StateSlot& st);
  void exec_for(const Stmt& s);
  bool exec_require(const Stmt& s);
  void record(const Stmt& s, const std::string& target, const std::string& type);

  // ---- expressions (eval.cpp)
  Value eval(const Expr& e);
  Value eval_maybe_missing(const Expr& e);
  Value lookup(const std::string& name, const Span& span);
  /// Where a config path (config.a.b) leads in config.json.
  struct ConfigLookup {
    const nlohmann::json* value = nullptr;  ///< the value, if every step is present and not null
    std::string key;                         ///< the path up to the step that ended the walk
    bool null = false;                       ///< a step (`key`) is null
    bool null_leaf = false;                  ///< ... and it is the last one (the key is present)
    bool failed = false;                     ///< a step is not an object: reported
    const nlohmann::json* parent = nullptr;  ///< the object a missing step was looked for in
  };
  /// Walks config.a.b. A step that exists but is not an object (`"rope_parameters": "x"`) is an
  /// error naming the key and its type (reported once per key); absent and null steps are not.
  ConfigLookup config_lookup(const Expr& e);
  Value config_value(const Expr& e, bool allow_missing);
  /// has(config.key): whether config.json holds the key (null included).
  Value has(const Expr& e);
  /// A config.json value as a compile-time value (`key` names it in messages); an array is a
  /// Kind::Object value pointing at it, to be indexed (config.layer_types[l]).
  Value config_json_value(const nlohmann::json& j, const std::string& key, const Span& span);
  Value unary(const Expr& e);
  Value binary(Tok op, const Value& a, const Value& b, const Expr& e);
  Value fold(Tok op, const Value& a, const Value& b, const Expr& e);
  Value coalesce(const Expr& e, bool allow_missing);
  /// Evaluates a Binary node and the Binary nodes down its left operands in a loop (see eval.cpp).
  Value binary_chain(const Expr& top, bool allow_missing);
  Value member(const Expr& e);
  Value index(const Expr& e);
  /// One item of a tensor index x[i, a:b:c, ...], its bounds evaluated to constants.
  struct IndexItem {
    enum { Int, Slice, Ellipsis } kind;
    int64_t a = 0;  ///< an Int item's index, negative from the end
    std::optional<int64_t> start, stop;
    int64_t step = 1;
    Span span;
  };
  /// shape[k]: a dim, so that a program can take a size from a tensor it was given.
  Value index_shape(const Value& base, const Expr& e);
  /// config.layer_types[l]: a config array is no language value, so it is read only here, entry by entry.
  Value index_config_array(const Value& base, const Expr& e);
  /// x[...]: every item is evaluated before any is refused, so that all bad ones are reported; a
  /// tensor item is a gather instead.
  Value index_tensor(const Value& base, const Expr& e);
  /// a:b:c with its bounds evaluated; nullopt once reported, after all three parts are checked.
  std::optional<IndexItem> slice_item(const Expr& x);
  /// One item per axis ('...' and the missing trailing axes as full slices), so that slice_axes
  /// need not know how the index was written; nullopt once reported.
  std::optional<std::vector<IndexItem>> index_per_axis(const std::vector<IndexItem>& items, const Value& base,
                                                       const Expr& e);
  /// One Slice node per axis not taken whole, then one reshape that drops the integer-indexed
  /// axes: the IR has no op that slices and drops at once.
  Value slice_axes(const Value& base, const std::vector<IndexItem>& per_axis);
  Value call(const Expr& e);
  Value call_fn(const FnDecl& fn, const std::vector<Arg>& args, const Expr& call);
  Value param_value(ParamSlot& p, const Span& span);
  Value state_value(StateSlot& s);

  // ---- primitives (primitives.cpp)
  Value call_primitive(const std::string& name, const std::vector<Arg>& args, const Expr& call);
  Value call_method(const Value& self, const std::string& name, const std::vector<Arg>& args, const Expr& call);
  /// `what` names the operation in its errors when it is a function typed as `op` (where, maximum).
  Value tensor_binary(Tok op, const Value& a, const Value& b, const Expr& e, const std::string& what = "");
  Value matmul(const Value& a, const Value& b, const Expr& e);
  Value unary_math(ir::Op op, const std::string& name, const Value& x, const Expr& e);
  Value reduce(ir::Op op, const std::string& name, const Value& x, int64_t axis, bool keepdim, const Expr& e);
  Value view(const Value& x, const std::vector<Arg>& dims, const Expr& e);
  Value gather(const Value& table, const Value& idx, const Expr& e);
  Value attention(const std::vector<Arg>& args, const Expr& e);
  Value to_int(const std::vector<Arg>& args, const Expr& e);
  Value concat(const std::vector<Arg>& args, const Expr& e);
  Value arange(const std::vector<Arg>& args, const Expr& e);
  // mixtures of experts (experts.cpp)
  Value topk(const std::vector<Arg>& args, const Expr& e);
  Value moe(const std::vector<Arg>& args, const Expr& e);
  Value contains(const Expr& e);

  // ---- IR emission helpers (primitives.cpp)
  ir::ValueId emit(ir::Op op, DType dtype, ir::Shape shape, std::vector<ir::ValueId> operands, ir::Attrs attrs = {});
  Value emit_value(ir::Op op, DType dtype, ir::Shape shape, std::vector<ir::ValueId> operands, ir::Attrs attrs = {});
  ir::ValueId cast(ir::ValueId v, DType to);
  ir::ValueId reshape(ir::ValueId v, ir::Shape shape);
  ir::ValueId scalar_const(double value, DType dtype, size_t rank);
  ir::ValueId to_rank(ir::ValueId v, size_t rank);
  /// Broadcast shape of a and b (numpy rules, right-aligned); nullopt and an error if they don't.
  std::optional<ir::Shape> broadcast_shape(const ir::Shape& a, const ir::Shape& b, const std::string& what, const Span& span);
  std::optional<int64_t> norm_axis(int64_t axis, size_t rank, const Span& span);

  // ---- diagnostics
  Value err(const Span& span, const std::string& message);
  /// "unknown name 'NAME'" at span, or nothing for a name a statement dropped at a syntax error
  /// before it would have bound (Module::dropped_before); returns Value::error() either way.
  Value unknown_name(const Span& span, const std::string& name);
  std::string show(const Value& v) const { return describe(v, sym_names_); }
  std::string show(const ir::Shape& s) const { return format_shape(s, sym_names_); }
  std::string show(DType t, const ir::Shape& s) const { return format_type(t, s, sym_names_); }

  Program& p_;
  const nlohmann::json& config_;
  BindOptions opts_;
  CheckReport& report_;
  ir::Graph& g_;
  Diagnostics& diags_;

  std::unordered_map<std::string, Value> globals_;      ///< dims, consts, dtypes, S, runtime dims
  std::unordered_map<std::string, std::string> global_kind_;  ///< "dim", "const", ... for messages
  std::unordered_map<std::string, ParamSlot> params_;
  std::vector<std::unordered_map<std::string, ParamSlot>> layer_params_;
  std::string layer_var_;
  int64_t layer_lo_ = 0;
  bool has_layers_ = false;
  bool s_given_ = false;  ///< S came from BindOptions::max_seq; a program's `S = ...` dim is then not bound
  /// A layers block was declared but its range was rejected (already reported): a `for` over it
  /// stays silent instead of adding "the model has no layers block".
  bool layers_failed_ = false;
  /// A top-level `require` failed: the program does not implement this config, and binding the
  /// declarations after it would only add errors that follow from it (a config-only require is
  /// checked first, see check_config_requires; the others where they stand).
  bool config_refused_ = false;
  /// The `require`s check_config_requires evaluated already; bind() skips them.
  std::unordered_set<const Decl*> early_requires_;
  /// Config keys reported as not being objects (config_lookup), each reported once.
  std::unordered_set<std::string> bad_config_steps_;
  std::unordered_map<std::string, StateSlot> states_;
  std::vector<std::string> state_order_;
  std::unordered_map<std::string, int32_t> tensor_to_param_;
  std::unordered_map<int32_t, ir::ValueId> param_nodes_;  ///< graph param index -> its Param node
  std::vector<Frame> frames_;
  std::vector<std::string> sym_names_;
  bool allow_missing_ = false;
  int64_t steps_ = 0;      ///< expressions evaluated, bounded (see eval)
  int eval_depth_ = 0;
  bool too_deep_reported_ = false;  ///< the statement being evaluated has hit kMaxEvalDepth
  static constexpr int kMaxEvalDepth = 600;

  Span stmt_span_;          ///< the forward statement being lowered (span of its nodes)
  std::string stmt_name_;   ///< its binding name with the layer prefix (name of its nodes)
  Span return_span_;        ///< the forward's returned expression
  int32_t cur_layer_ = -1;
  bool recording_ = true;
};

/// Maps a dtype spelling to a DType: the language's (bf16, f16, f32, i32, bool) or Hugging Face's
/// config spelling (bfloat16, float16, float32, int32).
std::optional<DType> dtype_from_string(const std::string& s);

}  // namespace lg::lang
