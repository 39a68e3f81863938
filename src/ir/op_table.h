// The IR's ops from one table (ops.def): the Op enum, each op's name, group, arity, flags and
// result dtype rule, its scalar meaning on the host (the CPU reference, the staged executor and
// the language's constant folding all evaluate it through host_eval) and its CUDA expression
// (the renderer substitutes operands into OpInfo::cuda).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>

namespace lg::ir {

/// The primitives, in ops.def's order (see there for each one's operands and attributes).
enum class Op : uint8_t {
#define LG_OP(Name, name, Group, arity, Result) Name,
#define LG_UNARY(Name, name, flags, Result, host, host_int, cuda) Name,
#define LG_BINARY(Name, name, flags, host, host_int, cuda, cuda_int) Name,
#define LG_COMPARE(Name, name, host, cuda) Name,
#define LG_TERNARY(Name, name, host, cuda) Name,
#include "ir/ops.def"
};

/// What an op is, for the passes: elementwise groups fuse freely, the others have a stage kind.
enum class OpGroup : uint8_t {
  Source,     ///< no operands: Input, Param, State, Const, Arange
  Unary,      ///< elementwise, one operand (its shape)
  Binary,     ///< elementwise arithmetic, broadcasting
  Compare,    ///< elementwise comparison, broadcasting; bool result
  Ternary,    ///< Where
  Reduce,     ///< over one axis
  Contract,   ///< MatMul
  Index,      ///< Gather
  Movement,   ///< views: index arithmetic, no data
  State,      ///< StateWrite
  Attention,  ///< Attention
  Select,     ///< TopK, ArgTopK (routing: the k largest along an axis)
  Experts,    ///< MoeGateUp, MoeDown (routed expert matmuls: read only the experts picked)
};

/// How a node's dtype follows from its operands (the verifier checks it).
enum class ResultDType : uint8_t {
  Declared,  ///< chosen by the node (sources; Cast: its target)
  Operand,   ///< the operands' dtype (class): operand 0, the common one, or the branches (Where)
  Bool,      ///< comparisons
  Float,     ///< a float dtype (MatMul)
  F32,       ///< f32 (Attention)
};

/// OpInfo::flags.
enum OpFlag : uint8_t {
  kFloatOnly = 1,  ///< operands must be float (no integer form; the front end and lifter refuse it)
  kCostly = 2,     ///< transcendental math: worth computing once rather than in every reader
  kLangFn = 4,     ///< a .lg primitive called by the op's name (`erf(x)`)
};

/// One row of ops.def.
struct OpInfo {
  std::string_view name;  ///< lower-case, as `lg ir` prints it and (kLangFn) as .lg calls it
  OpGroup group;
  int8_t arity;           ///< operand count; -1: one or more (Concat)
  uint8_t flags;          ///< OpFlag bits
  ResultDType result;
  const char* cuda;       ///< elementwise: CUDA expression on fp32 operands $0, $1, $2; else nullptr
  const char* cuda_int;   ///< binary: the same when both operands are integers; else = cuda
};

/// The table row of `op`.
const OpInfo& op_info(Op op);
/// Every op, in enum order (for registration by name, e.g. the language's primitives).
std::span<const OpInfo> all_ops();

inline const char* op_name(Op op) { return op_info(op).name.data(); }
inline bool is_source(Op op) { return op_info(op).group == OpGroup::Source; }
inline bool is_unary(Op op) { return op_info(op).group == OpGroup::Unary; }
/// Arithmetic and comparisons (two operands, broadcasting).
inline bool is_binary(Op op) { return op_info(op).group == OpGroup::Binary || op_info(op).group == OpGroup::Compare; }
inline bool is_compare(Op op) { return op_info(op).group == OpGroup::Compare; }
/// Unary, binary, comparison and Where.
inline bool is_elementwise(Op op) { return is_unary(op) || is_binary(op) || op_info(op).group == OpGroup::Ternary; }
inline bool is_reduce(Op op) { return op_info(op).group == OpGroup::Reduce; }
inline bool is_movement(Op op) { return op_info(op).group == OpGroup::Movement; }
inline bool is_float_only(Op op) { return (op_info(op).flags & kFloatOnly) != 0; }
inline bool is_costly(Op op) { return (op_info(op).flags & kCostly) != 0; }

namespace host {

/// Integer division truncating toward zero (as C and torch's `trunc` rounding); throws lg::Error
/// for a zero divisor.
int64_t int_div(int64_t x, int64_t y);
/// x ** y by repeated multiplication; throws lg::Error for a negative exponent.
int64_t int_pow(int64_t x, int64_t y);
/// Throws lg::Error: `op` has no integer form (a float-only op reached with integer operands).
[[noreturn]] void no_int_form(Op op);
/// Throws lg::Error "NAME is not WHAT op" (an op of the wrong group for a host evaluator).
[[noreturn]] void not_a(const char* what, Op op);

}  // namespace host

/// The scalar meaning of elementwise op `op` (ops.def's host column) on float-class operands
/// computed in F: float in the CPU reference, double in the staged executor and constant folding.
/// Operands past the op's arity are ignored. Throws lg::Error for an op that is not elementwise.
template <class F>
F host_eval(Op op, F x, F y = F(0), F z = F(0)) {
  (void)y;
  (void)z;
  switch (op) {
#define LG_UNARY(Name, name, flags, Result, host, host_int, cuda) \
  case Op::Name: return static_cast<F>(host);
#define LG_BINARY(Name, name, flags, host, host_int, cuda, cuda_int) \
  case Op::Name: return static_cast<F>(host);
#define LG_COMPARE(Name, name, host, cuda) \
  case Op::Name: return static_cast<F>(host);
#define LG_TERNARY(Name, name, host, cuda) \
  case Op::Name: return static_cast<F>(host);
#include "ir/ops.def"
    default: break;
  }
  host::not_a("an elementwise", op);
}

/// Calls fn(f) with f a stateless callable (auto x) -> decltype(x) computing unary op `op`'s host
/// column: fn is instantiated once per op, so a loop inside it has the op's arithmetic inlined
/// (the CPU reference's elementwise loops). Throws lg::Error if `op` is not unary.
template <class Fn>
void with_host_unary(Op op, Fn&& fn) {
  switch (op) {
#define LG_UNARY(Name, name, flags, Result, host, host_int, cuda)                      \
  case Op::Name:                                                                      \
    return fn([](auto x) {                                                            \
      using F [[maybe_unused]] = decltype(x);                                         \
      return static_cast<F>(host);                                                    \
    });
#include "ir/ops.def"
    default: break;
  }
  host::not_a("a unary", op);
}

/// The same for binary ops and comparisons: f is (auto x, auto y) -> decltype(x) (a comparison's
/// result as 0 or 1 of the operands' type).
template <class Fn>
void with_host_binary(Op op, Fn&& fn) {
  switch (op) {
#define LG_BINARY(Name, name, flags, host, host_int, cuda, cuda_int)                   \
  case Op::Name:                                                                      \
    return fn([](auto x, auto y) {                                                    \
      using F [[maybe_unused]] = decltype(x);                                         \
      return static_cast<F>(host);                                                    \
    });
#define LG_COMPARE(Name, name, host, cuda)                                             \
  case Op::Name:                                                                      \
    return fn([](auto x, auto y) {                                                    \
      using F [[maybe_unused]] = decltype(x);                                         \
      return static_cast<F>(host);                                                    \
    });
#include "ir/ops.def"
    default: break;
  }
  host::not_a("a binary", op);
}

/// The same on integer (i32/bool) operands (ops.def's host_int column), in int64_t. Throws
/// lg::Error for float-only ops and for what host::int_div / int_pow refuse.
int64_t host_eval_int(Op op, int64_t x, int64_t y = 0, int64_t z = 0);

}  // namespace lg::ir
