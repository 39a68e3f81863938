// The verifier rejects each kind of malformed graph with a message naming the node and its
// span; the printer writes the documented one-line-per-node form.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/print.h"
#include "ir/verify.h"
#include "support/error.h"

namespace lg::ir {
namespace {

using test::Builder;
using test::C;
using test::Tsym;

std::string verify_error(const Graph& g) {
  try {
    verify(g);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Verify, AcceptsTheTinyAttentionGraph) { EXPECT_EQ(verify_error(test::tiny_attention_graph()), ""); }

TEST(Verify, RejectsBadShapesWithNodeAndSpan) {
  Builder b;
  const ValueId x = b.input("x", DType::F32, {Tsym(), C(4)});
  const ValueId w = b.param("w", DType::F32, {C(4)});
  b.bin(Op::Mul, x, w, {Tsym(), C(5)});  // line 3
  b.g.outputs = {2};
  const std::string m = verify_error(b.g);
  EXPECT_NE(m.find("test.lg:3:3"), std::string::npos) << m;
  EXPECT_NE(m.find("%2 = mul f32[T,5] %0, %1"), std::string::npos) << m;
  EXPECT_NE(m.find("f32[T,4]"), std::string::npos) << m;
}

TEST(Verify, RejectsEachBrokenRule) {
  auto expect_reject = [](Graph g, const std::string& needle) {
    const std::string m = verify_error(g);
    EXPECT_NE(m.find(needle), std::string::npos) << "message: " << m;
  };
  {
    Builder b;  // operand that does not precede its user
    const ValueId x = b.input("x", DType::F32, {C(2)});
    b.node(Op::Neg, DType::F32, {C(2)}, {x + 1});
    b.node(Op::Neg, DType::F32, {C(2)}, {x});
    expect_reject(b.g, "topological");
  }
  {
    Builder b;  // operand count
    const ValueId x = b.input("x", DType::F32, {C(2)});
    b.node(Op::Add, DType::F32, {C(2)}, {x});
    expect_reject(b.g, "expects 2 operands");
  }
  {
    Builder b;  // dtype classes
    const ValueId x = b.input("x", DType::F32, {C(2)});
    const ValueId i = b.input("i", DType::I32, {C(2)});
    b.node(Op::Add, DType::F32, {C(2)}, {x, i});
    expect_reject(b.g, "cast first");
  }
  {
    Builder b;  // matmul contraction
    const ValueId x = b.input("x", DType::F32, {Tsym(), C(4)});
    const ValueId w = b.param("w", DType::F32, {C(5), C(3)});
    b.node(Op::MatMul, DType::F32, {Tsym(), C(3)}, {x, w});
    expect_reject(b.g, "contraction dims differ");
  }
  {
    Builder b;  // reshape changing the element count, symbolically
    const ValueId x = b.input("x", DType::F32, {Tsym(), C(8)});
    b.reshape(x, {Tsym(), C(2), C(3)});
    expect_reject(b.g, "element count");
  }
  {
    Builder b;  // attention heads that do not group
    const ValueId q = b.input("q", DType::F32, {Tsym(), C(4), C(8)});
    const ValueId pos = b.input("pos", DType::I32, {Tsym()});
    const ValueId k = b.state("k", DType::F32, {C(3), C(16), C(8)});
    Attrs a;
    a.scale = 0.5;
    a.gqa_group = 2;
    b.node(Op::Attention, DType::F32, {Tsym(), C(4), C(8)}, {q, k, k, pos}, a);
    b.g.final_states = {k};
    expect_reject(b.g, "gqa_group");
  }
  {
    Builder b;  // an i32 constant no i32 holds: an executor's conversion would be undefined
    Attrs a;
    a.scalar = 4294967296.0;
    b.node(Op::Const, DType::I32, {}, {}, a);
    expect_reject(b.g, "an i32 constant must be an integer in the i32 range");
  }
  {
    Builder b;  // nor one that is not an integer
    Attrs a;
    a.scalar = 0.5;
    b.node(Op::Const, DType::I32, {}, {}, a);
    expect_reject(b.g, "an i32 constant must be an integer in the i32 range");
  }
  {
    Builder b;  // a slice's length is computed without overflow: a step past the dim gives one row
    const ValueId x = b.input("x", DType::F32, {C(8)});
    Attrs a;
    a.axis = 0;
    a.start = 0;
    a.stop = 8;
    a.step = INT64_MAX;
    b.node(Op::Slice, DType::F32, {C(2)}, {x}, a);
    expect_reject(b.g, "f32[1]");
  }
  {
    Builder b;  // concat dims that overflow int64
    const ValueId x = b.input("x", DType::F32, {C(INT64_MAX / 2 + 1)});
    Attrs a;
    a.axis = 0;
    b.node(Op::Concat, DType::F32, {C(1)}, {x, x}, a);
    expect_reject(b.g, "concat dims overflow");
  }
  {
    Graph g = test::tiny_attention_graph();  // final state not a version of its state
    std::swap(g.final_states[0], g.final_states[1]);
    expect_reject(g, "not a version of that state");
  }
  {
    Graph g = test::tiny_attention_graph();  // state write with the wrong value shape
    for (Node& n : g.nodes)
      if (n.op == Op::StateWrite) {
        n.attrs.axis = 2;
        break;
      }
    expect_reject(g, "state_write");
  }
}

TEST(Print, OneLinePerNodeWithNameAndSource) {
  Builder b;
  const ValueId x = b.input("x", DType::F32, {Tsym(), C(4), C(128)});
  const ValueId y = b.input("y", DType::F32, {Tsym(), C(4), C(128)});
  b.node(Op::Mul, DType::F32, {Tsym(), C(4), C(128)}, {x, y}, {}, "l0.q");
  const ValueId r = b.reshape(2, {Tsym(4), C(128)});
  b.g.outputs = {r};
  const std::string text = print(b.g);
  const size_t at = text.find("%2 = mul f32[T,4,128] %0, %1 ");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_TRUE(line.ends_with("   # l0.q  test.lg:3")) << line;
  EXPECT_NE(text.find("%3 = reshape f32[4*T,128] %2"), std::string::npos) << text;
  EXPECT_NE(text.find("input x: f32[T,4,128]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("return %3\n"), std::string::npos) << text;
  EXPECT_EQ(print(test::tiny_attention_graph()).find("state_write bf16[1,2,32,8]") != std::string::npos, true);
}

}  // namespace
}  // namespace lg::ir
