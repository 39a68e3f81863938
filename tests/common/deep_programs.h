// Generators of long and deep .lg programs, for the tests that no program crashes or stalls the
// compiler (tests/lift/deep_programs_test.cpp) and for the compile-time curve
// (bench/compile_time_bench.cpp, docs/lifting.md). Each returns the program's text; every program
// checks against deep_config() (hidden_size 8, S = 64).
//
//   - chain(n, op): `y = x OP x OP ... OP x`, n terms, one statement (a left-deep AST of n-1
//     nodes; with + it lowers to n-1 IR nodes);
//   - coalesce_chain(n), and_chain(n): compile-time `config.k0 ?? ... ?? 1.0` and
//     `true && ... && true` chains of n terms used by the forward;
//   - fn_tower(levels): fns f0..f{levels-1}, f0(x) = x + x and f{k}(x) = f{k-1}(f{k-1}(x)), and
//     `y = f(f(x))` of the last: a short program that inlines to a chain of 2^levels IR nodes
//     (levels = 15: 32,768);
//   - random_program(seed, size): a seeded mix of long chains, deep nesting (parentheses, unary
//     minus, calls), fn towers, reductions and many statements.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace lg::test {

/// The config every generated program is checked against.
inline nlohmann::json deep_config() {
  return nlohmann::json{{"hidden_size", 8}, {"max_position_embeddings", 64}};
}

/// A program of one input x: f32[T, D]: the forward's statements `lets` (each line indented by
/// four spaces, so that the first is line 4), `return result`, then the fns `fns`.
inline std::string deep_program(const std::string& lets, const std::string& result, const std::string& fns = "") {
  return "model deep {\n  dims { D = config.hidden_size }\n  forward(x: f32[T, D]) -> f32[T, D] {\n" + lets +
         "    return " + result + "\n  }\n}\n" + fns;
}

/// `y = x OP x OP ... OP x` with n >= 1 terms of the tensor input x (OP: + - * /).
inline std::string chain(int64_t n, const std::string& op = "+") {
  std::string e = "x";
  e.reserve(static_cast<size_t>(n) * (op.size() + 3));
  for (int64_t k = 1; k < n; ++k) e += " " + op + " x";
  return deep_program("    y = " + e + "\n", "y");
}

/// A compile-time `??` chain of n terms over absent config keys, ending in 1.0; the forward
/// multiplies x by it.
inline std::string coalesce_chain(int64_t n) {
  std::string e;
  for (int64_t k = 0; k + 1 < n; ++k) e += "config.k" + std::to_string(k % 1000) + " ?? ";
  e += "1.0";
  return deep_program("    c = " + e + "\n", "x * c");
}

/// A compile-time `&&` chain of n `true` terms; the forward picks x or 2x by it.
inline std::string and_chain(int64_t n) {
  std::string e = "true";
  for (int64_t k = 1; k < n; ++k) e += " && true";
  return deep_program("    ok = " + e + "\n", "ok ? x : x * 2.0");
}

/// Nested fns that inline to a chain of 2^levels Add nodes (levels >= 1): f0(x) = x + x,
/// f{k}(x) = f{k-1}(f{k-1}(x)) for k < levels, and the forward applies f{levels-1} twice.
inline std::string fn_tower(int levels) {
  std::string fns = "fn f0(x) = x + x\n";
  for (int k = 1; k < levels; ++k)
    fns += "fn f" + std::to_string(k) + "(x) = f" + std::to_string(k - 1) + "(f" + std::to_string(k - 1) + "(x))\n";
  const std::string top = "f" + std::to_string(levels - 1);
  return deep_program("    y = " + top + "(" + top + "(x))\n", "y", fns);
}

/// A seeded random program of roughly `size` expression nodes: statements that are long chains,
/// deeply nested expressions, fn towers, reductions and broadcasts. Valid for deep_config() in
/// most cases; when it is not (a nesting past the parser's limit, a program too large), the
/// compiler must say so with a located error, never crash.
inline std::string random_program(uint32_t seed, int64_t size) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  std::string lets, fns;
  int vars = 0;
  auto var = [&]() { return vars == 0 || pick(4) == 0 ? std::string("x") : "v" + std::to_string(pick(vars)); };
  const char* ops[] = {"+", "-", "*"};
  int fn_count = 0;
  int64_t budget = size;
  while (budget > 0) {
    std::string e;
    switch (pick(6)) {
      case 0: {  // a long left-assoc chain
        int64_t n = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(std::max<int64_t>(budget, 2)));
        e = var();
        for (int64_t k = 1; k < n; ++k) e += std::string(" ") + ops[pick(3)] + " " + (pick(8) == 0 ? "0.5" : var());
        budget -= n;
        break;
      }
      case 1: {  // right-nested parentheses
        int depth = 1 + pick(60);  // 3 parser levels each: within its 200
        e = var();
        for (int k = 0; k < depth; ++k) e = var() + " " + ops[pick(3)] + " (" + e + ")";
        budget -= depth;
        break;
      }
      case 2: {  // nested calls and unary minus
        int depth = 1 + pick(60);
        e = var();
        for (int k = 0; k < depth; ++k) {
          switch (pick(3)) {
            case 0: e = "-" + e; break;
            case 1: e = "tanh(" + e + ")"; break;
            default: e = "(" + e + ").to(f32)"; break;
          }
        }
        budget -= depth;
        break;
      }
      case 3: {  // a fn tower
        int levels = 1 + pick(12);
        std::string base = "t" + std::to_string(fn_count++) + "_";
        fns += "fn " + base + "0(x) = x * 0.5 + x\n";
        for (int k = 1; k < levels; ++k)
          fns += "fn " + base + std::to_string(k) + "(x) = " + base + std::to_string(k - 1) + "(" + base +
                 std::to_string(k - 1) + "(x))\n";
        e = base + std::to_string(levels - 1) + "(" + var() + ")";
        budget -= int64_t{2} << levels;
        break;
      }
      case 4: {  // a reduction broadcast back
        std::string v = var();
        e = v + " - sum(" + v + " * " + v + ", axis=-1, keepdim=true)";
        budget -= 4;
        break;
      }
      default: {  // a short statement
        e = var() + " " + ops[pick(3)] + " " + var();
        budget -= 1;
        break;
      }
    }
    lets += "    v" + std::to_string(vars++) + " = " + e + "\n";
  }
  return deep_program(lets, "v" + std::to_string(vars - 1), fns);
}

}  // namespace lg::test
