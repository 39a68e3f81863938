// The op table's rows (ops.def expanded into OpInfo), the integer host forms, and the errors of
// the host evaluators.
#include "ir/op_table.h"

#include <string>

#include "support/error.h"

namespace lg::ir {

namespace {

constexpr OpInfo kOps[] = {
#define LG_OP(Name, name, Group, arity, Result) {name, OpGroup::Group, arity, 0, ResultDType::Result, nullptr, nullptr},
#define LG_UNARY(Name, name, flags, Result, host, host_int, cuda) \
  {name, OpGroup::Unary, 1, flags, ResultDType::Result, cuda, cuda},
#define LG_BINARY(Name, name, flags, host, host_int, cuda, cuda_int) \
  {name, OpGroup::Binary, 2, flags, ResultDType::Operand, cuda, cuda_int},
#define LG_COMPARE(Name, name, host, cuda) {name, OpGroup::Compare, 2, 0, ResultDType::Bool, cuda, cuda},
#define LG_TERNARY(Name, name, host, cuda) {name, OpGroup::Ternary, 3, 0, ResultDType::Operand, cuda, cuda},
#include "ir/ops.def"
};

constexpr size_t kOpCount = 0
#define LG_OP(Name, name, Group, arity, Result) +1
#define LG_UNARY(Name, name, flags, Result, host, host_int, cuda) +1
#define LG_BINARY(Name, name, flags, host, host_int, cuda, cuda_int) +1
#define LG_COMPARE(Name, name, host, cuda) +1
#define LG_TERNARY(Name, name, host, cuda) +1
#include "ir/ops.def"
    ;
static_assert(sizeof(kOps) / sizeof(kOps[0]) == kOpCount);

}  // namespace

const OpInfo& op_info(Op op) {
  const auto i = static_cast<size_t>(op);
  if (i >= kOpCount) throw Error("internal error: op #" + std::to_string(i) + " is not in ops.def");
  return kOps[i];
}

std::span<const OpInfo> all_ops() { return kOps; }

namespace host {

int64_t int_div(int64_t x, int64_t y) {
  if (y == 0) throw Error("integer division by zero");
  return x / y;
}

int64_t int_pow(int64_t x, int64_t y) {
  if (y < 0) throw Error("integer power with a negative exponent");
  int64_t r = 1;
  for (int64_t k = 0; k < y; ++k) r *= x;
  return r;
}

void no_int_form(Op op) { throw Error(std::string(op_name(op)) + " has no integer form (cast to a float dtype first)"); }

void not_a(const char* what, Op op) { throw Error(std::string(op_name(op)) + " is not " + what + " op"); }

}  // namespace host

int64_t host_eval_int(Op op, int64_t x, int64_t y, int64_t z) {
  (void)y;
  (void)z;
  using host::int_div;
  using host::int_pow;
  auto no_int = [op]() -> int64_t { host::no_int_form(op); };
  switch (op) {
#define LG_UNARY(Name, name, flags, Result, host, host_int, cuda) \
  case Op::Name: return static_cast<int64_t>(host_int);
#define LG_BINARY(Name, name, flags, host, host_int, cuda, cuda_int) \
  case Op::Name: return static_cast<int64_t>(host_int);
#define LG_COMPARE(Name, name, host, cuda) \
  case Op::Name: return static_cast<int64_t>(host);
#define LG_TERNARY(Name, name, host, cuda) \
  case Op::Name: return static_cast<int64_t>(host);
#include "ir/ops.def"
    default: break;
  }
  host::not_a("an elementwise", op);
}

}  // namespace lg::ir
