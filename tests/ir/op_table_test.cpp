// The op table (src/ir/ops.def, op_table.h): every row is consistent (names, arities, CUDA
// templates naming exactly their operands), the group predicates are what the passes expect, and
// the integer host forms truncate and refuse as the CPU reference always did.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ir/op_table.h"
#include "support/error.h"

namespace lg::ir {
namespace {

TEST(OpTable, RowsAreConsistent) {
  std::set<std::string_view> names;
  const auto ops = all_ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op op = static_cast<Op>(i);
    const OpInfo& info = op_info(op);
    SCOPED_TRACE(std::string(info.name));
    EXPECT_FALSE(info.name.empty());
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate name";
    EXPECT_EQ(std::string(op_name(op)), info.name);
    if (!is_elementwise(op)) {
      EXPECT_EQ(info.cuda, nullptr);
      continue;
    }
    ASSERT_NE(info.cuda, nullptr);
    ASSERT_NE(info.cuda_int, nullptr);
    // The template names $0 .. $(arity-1), and nothing else.
    for (const char* t : {info.cuda, info.cuda_int}) {
      const std::string s = t;
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(s.find("$" + std::to_string(k)) != std::string::npos, k < info.arity) << s;
    }
  }
  EXPECT_EQ(op_info(Op::Where).arity, 3);
  EXPECT_EQ(op_info(Op::Concat).arity, -1);
}

TEST(OpTable, GroupsAreWhatThePassesKeyOn) {
  EXPECT_TRUE(is_source(Op::Arange));
  EXPECT_TRUE(is_unary(Op::Cast));
  EXPECT_TRUE(is_binary(Op::Ne));
  EXPECT_TRUE(is_compare(Op::Lt));
  EXPECT_FALSE(is_compare(Op::Maximum));
  EXPECT_TRUE(is_elementwise(Op::Where));
  EXPECT_FALSE(is_elementwise(Op::ReduceSum));
  EXPECT_TRUE(is_movement(Op::Concat));
  EXPECT_FALSE(is_movement(Op::Gather));
  // Float-only: the unary math (not neg, abs, cast); costly: the transcendentals and pow.
  for (Op op : {Op::Exp, Op::Log, Op::Sqrt, Op::Rsqrt, Op::Recip, Op::Sin, Op::Cos, Op::Tanh, Op::Sigmoid, Op::Erf})
    EXPECT_TRUE(is_float_only(op)) << op_name(op);
  for (Op op : {Op::Neg, Op::Abs, Op::Cast, Op::Add, Op::Pow, Op::Where}) EXPECT_FALSE(is_float_only(op)) << op_name(op);
  for (Op op : {Op::Exp, Op::Log, Op::Sin, Op::Cos, Op::Tanh, Op::Sigmoid, Op::Erf, Op::Pow})
    EXPECT_TRUE(is_costly(op)) << op_name(op);
  for (Op op : {Op::Sqrt, Op::Rsqrt, Op::Recip, Op::Add, Op::Mul}) EXPECT_FALSE(is_costly(op)) << op_name(op);
  EXPECT_EQ(op_info(Op::Lt).result, ResultDType::Bool);
  EXPECT_EQ(op_info(Op::Cast).result, ResultDType::Declared);
}

TEST(OpTable, HostFormsOnFloatsAndIntegers) {
  EXPECT_EQ(host_eval(Op::Sigmoid, 0.0), 0.5);
  EXPECT_EQ(host_eval(Op::Rsqrt, 4.0f), 0.5f);
  EXPECT_EQ(host_eval(Op::Lt, 1.0, 2.0), 1.0);
  EXPECT_EQ(host_eval(Op::Where, 0.0, 1.0, 2.0), 2.0);
  EXPECT_EQ(host_eval(Op::Div, -7.0, 2.0), -3.5);
  EXPECT_EQ(host_eval_int(Op::Div, -7, 2), -3);  // toward zero, as torch's trunc division
  EXPECT_EQ(host_eval_int(Op::Pow, 3, 4), 81);
  EXPECT_EQ(host_eval_int(Op::Abs, -5), 5);
  EXPECT_EQ(host_eval_int(Op::Neg, 5), -5);
  EXPECT_THROW(host_eval_int(Op::Div, 1, 0), Error);
  EXPECT_THROW(host_eval_int(Op::Pow, 2, -1), Error);
  EXPECT_THROW(host_eval_int(Op::Exp, 1), Error);
  EXPECT_THROW(host_eval(Op::MatMul, 1.0, 2.0), Error);
}

}  // namespace
}  // namespace lg::ir
