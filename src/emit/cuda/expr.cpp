#include "emit/cuda/expr.h"

#include <cmath>
#include <cstdio>

#include "support/error.h"

namespace lg::emit::cuda {

std::string elementwise_expr(const ir::Node& n, bool ints, const std::vector<std::string>& operands) {
  if (!ir::is_elementwise(n.op)) throw Error("emit: internal error: " + std::string(ir::op_name(n.op)) + " is not elementwise");
  const ir::OpInfo& info = ir::op_info(n.op);
  std::string t = ints ? info.cuda_int : info.cuda;
  if (n.op == ir::Op::Cast) {
    // A value converts on the way into the dtype as on the host (cpu_ops' Store, the staged
    // executor's rounding): toward zero for i32, NaN 0 and saturated at the i32 range's ends (the
    // float an i32 of 2^31 - 1 is, 2^31, above), != 0 for bool; float dtypes are all fp32 here.
    // The operand is evaluated once, inside the immediately called lambda.
    if (n.dtype == DType::I32)
      t = "([](float x) { return x != x ? 0.0f : x >= 2147483648.0f ? 2147483648.0f : "
          "x <= -2147483648.0f ? -2147483648.0f : truncf(x); })($0)";
    else if (n.dtype == DType::Bool) t = "($0) != 0.0f ? 1.0f : 0.0f";
  }
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '$' && i + 1 < t.size() && t[i + 1] >= '0' && t[i + 1] <= '9') {
      out += operands.at(static_cast<size_t>(t[++i] - '0'));
      continue;
    }
    out += t[i];
  }
  return out;
}

std::string lit(double v) {
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  if (std::isnan(v)) return "__int_as_float(0x7fffffff)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

}  // namespace lg::emit::cuda
