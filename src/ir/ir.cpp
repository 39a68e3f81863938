// Group predicates and names of the IR ops. The groups are ranges of the Op enum, so the
// enum's order in ir.h is part of the contract: these checks keep that explicit.
#include "ir/ir.h"

namespace lg::ir {

static bool in_range(Op op, Op first, Op last) {
  return static_cast<uint8_t>(op) >= static_cast<uint8_t>(first) &&
         static_cast<uint8_t>(op) <= static_cast<uint8_t>(last);
}

bool is_source(Op op) { return in_range(op, Op::Input, Op::Arange); }
bool is_unary(Op op) { return in_range(op, Op::Neg, Op::Cast); }
bool is_binary(Op op) { return in_range(op, Op::Add, Op::Ne); }
bool is_elementwise(Op op) { return is_unary(op) || is_binary(op) || op == Op::Where; }
bool is_reduce(Op op) { return op == Op::ReduceSum || op == Op::ReduceMax; }
bool is_movement(Op op) { return in_range(op, Op::Reshape, Op::Concat); }

const char* op_name(Op op) {
  switch (op) {
    case Op::Input: return "input";
    case Op::Param: return "param";
    case Op::State: return "state";
    case Op::Const: return "const";
    case Op::Arange: return "arange";
    case Op::Neg: return "neg";
    case Op::Abs: return "abs";
    case Op::Exp: return "exp";
    case Op::Log: return "log";
    case Op::Sqrt: return "sqrt";
    case Op::Rsqrt: return "rsqrt";
    case Op::Recip: return "recip";
    case Op::Sin: return "sin";
    case Op::Cos: return "cos";
    case Op::Tanh: return "tanh";
    case Op::Sigmoid: return "sigmoid";
    case Op::Cast: return "cast";
    case Op::Add: return "add";
    case Op::Sub: return "sub";
    case Op::Mul: return "mul";
    case Op::Div: return "div";
    case Op::Pow: return "pow";
    case Op::Maximum: return "maximum";
    case Op::Minimum: return "minimum";
    case Op::Lt: return "lt";
    case Op::Le: return "le";
    case Op::Gt: return "gt";
    case Op::Ge: return "ge";
    case Op::Eq: return "eq";
    case Op::Ne: return "ne";
    case Op::Where: return "where";
    case Op::ReduceSum: return "reduce_sum";
    case Op::ReduceMax: return "reduce_max";
    case Op::MatMul: return "matmul";
    case Op::Gather: return "gather";
    case Op::Reshape: return "reshape";
    case Op::Permute: return "permute";
    case Op::Slice: return "slice";
    case Op::Concat: return "concat";
    case Op::StateWrite: return "state_write";
    case Op::Attention: return "attention";
  }
  return "?";
}

}  // namespace lg::ir
