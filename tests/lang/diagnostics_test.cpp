// Bad programs: each must be rejected with one diagnostic at the exact line:col with the exact
// message (what was expected, what was found). The programs are a small valid model with one
// mistake spliced in (see program()); the valid base itself must check, so every failure below
// is caused by the mistake.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "lang/lower.h"
#include "lang/program.h"

namespace {

const nlohmann::json& config() {
  static const nlohmann::json c = [] {
    std::ifstream in(std::string(LG_SHARED_DIR) + "/fixtures/tiny-qwen3/config.json");
    return nlohmann::json::parse(in);
  }();
  return c;
}

const char* kReturn = "    return x\n";
const char* kLayers = "  layers l in 0..2 {\n    param n: f32[D] = \"model.layers.{l}.norm\"\n  }\n";

/// The base model (lines 1-4), then `decls`, the forward (its first statement `x = e[t]`), `body`,
/// `ret`, the closing braces and `after` (top-level fns).
std::string program(const std::string& decls, const std::string& body, const std::string& ret = kReturn,
                    const std::string& after = "") {
  return "model m {\n"
         "  dims { D = config.hidden_size; V = config.vocab_size; H = config.num_attention_heads }\n"
         "  param e: f32[V, D] = \"model.embed_tokens.weight\"\n"
         "  state c: f32[2, S, D]\n" +
         decls +
         "  forward(t: i32[T], pos: i32[T]) -> f32[T, D] {\n"
         "    x = e[t]\n" +
         body + ret + "  }\n}\n" + after;
}

struct Mistake {
  const char* name;
  std::string source;
  int line, col;
  std::string message;
};

/// Prints a case as its name: gtest's listing and failure messages show it, and ctest names
/// the test by it (see INSTANTIATE_TEST_SUITE_P below).
void PrintTo(const Mistake& c, std::ostream* os) { *os << c.name; }

class BadProgram : public ::testing::TestWithParam<Mistake> {};

TEST(BadProgramBase, TheBaseProgramChecks) {
  auto out = lg::lang::check_source("bad.lg", program("", ""), config(), {});
  EXPECT_TRUE(out.ok) << out.rendered;
  auto layered = lg::lang::check_source("bad.lg", program(kLayers, "    for l in layers {\n      x = x * l.n\n    }\n"), config(), {});
  EXPECT_TRUE(layered.ok) << layered.rendered;
}

TEST_P(BadProgram, IsRejectedAtTheFaultWithItsMessage) {
  const Mistake& c = GetParam();
  auto out = lg::lang::check_source("bad.lg", c.source, config(), {});
  ASSERT_FALSE(out.ok) << c.source;
  ASSERT_FALSE(out.diagnostics.empty());
  const auto& d = out.diagnostics[0];
  EXPECT_EQ(d.span.line, c.line) << out.rendered;
  EXPECT_EQ(d.span.col, c.col) << out.rendered;
  EXPECT_EQ(d.message, c.message) << out.rendered;
  EXPECT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  // The rendering quotes the line and puts a caret under the column.
  EXPECT_NE(out.rendered.find("bad.lg:" + std::to_string(c.line) + ":" + std::to_string(c.col) + ": error: "),
            std::string::npos);
  EXPECT_NE(out.rendered.find('^'), std::string::npos);
}

const Mistake kCases[] = {
  {"MissingCloseParen", program("", "    y = (x + 1\n"),
   8, 5, "expected ')', found 'return'"},
  {"DanglingOperator", program("", "    y = x +\n"),
   7, 12, "expected an expression, found end of line"},
  {"StrayCharacter", program("", "    y = x $ 1\n"),
   7, 11, "unexpected character '$'"},
  {"UnterminatedString", program("  param q: f32[D] = \"q\n", ""),
   5, 21, "unterminated string: expected '\"' before the end of the line"},
  // A byte that is not UTF-8 (Latin-1's é, a binary file's 0xff) in a comment or a string was
  // taken as it came; outside them it is an unexpected character.
  {"InvalidUtf8InComment", program("", "    y = x  # caf\xe9 au lait\n"),
   7, 17, "invalid UTF-8 byte 0xe9 (a .lg file is UTF-8 text)"},
  {"InvalidUtf8InString", program("  param q: f32[D] = \"q\xff\"\n", ""),
   5, 23, "invalid UTF-8 byte 0xff (a .lg file is UTF-8 text)"},
  {"CutUtf8SequenceAtTheEndOfAComment", program("", "    y = x  # caf\xc3\n"),
   7, 17, "invalid UTF-8 byte 0xc3 (a .lg file is UTF-8 text)"},
  // Outside them a character past ASCII is named as typed, with its code point (it was "byte 206").
  {"NonAsciiLetter", program("", "    y = x + \xce\xb1\n"),
   7, 13, "unexpected character '\xce\xb1' (U+03B1; names and operators are ASCII, other characters may stand in "
          "strings and comments)"},
  {"SmartQuote", program("", "    y = x + \xe2\x80\x9c\n"),
   7, 13, "unexpected character '\xe2\x80\x9c' (U+201C; names and operators are ASCII, other characters may stand in "
          "strings and comments)"},
  {"ByteNotUtf8", program("", "    y = x + \xff\n"),
   7, 13, "unexpected character byte 0xff (not UTF-8: a .lg file is UTF-8 text)"},
  {"ControlByte", program("", "    y = x + \x07\n"),
   7, 13, "unexpected character byte 0x07 (a control character)"},
  {"ForWithoutIn", program("", "    for l layers {\n    }\n"),
   7, 11, "expected 'in', found 'layers'"},
  {"UnknownName", program("", "    y = z + x\n"),
   7, 9, "unknown name 'z'"},
  // A const used above its declaration says where the name is (it was only "unknown name 'Z'").
  {"ConstUsedAboveItsDeclaration", program("  const k = Z * 2\n  const Z = 4\n", ""),
   5, 13, "unknown name 'Z' here: it is declared below, at line 6, and the model's dims, consts and dtypes are bound in "
          "order"},
  {"UnknownFunction", program("", "    y = foo(x)\n"),
   7, 9, "unknown function 'foo'"},
  {"UnknownMethod", program("", "    y = x.frob()\n"),
   7, 9, "tensors have no method 'frob'"},
  {"MatmulInnerDimMismatch", program("", "    y = x @ e\n"),
   7, 9, "shape mismatch in '@': [T, 64] @ [512, 64]: inner dims 64 and 512 differ"},
  {"BroadcastMismatch", program("", "    y = x + e\n"),
   7, 9, "shape mismatch in '+': [T, 64] and [512, 64] do not broadcast (T vs 512)"},
  {"WrongRankTranspose", program("", "    y = x.view(T, H, 16).T\n"),
   7, 9, "wrong rank: .T needs a rank-2 tensor, found tensor f32[T, 4, 16] (use transpose(a, b))"},
  {"WrongRankMatmul", program("", "    y = x @ e[0]\n"),
   7, 9, "wrong rank: '@' needs operands of rank 2 or more, found tensor f32[T, 64] @ tensor f32[64]"},
  {"DtypeMismatchIntFloat", program("", "    y = x + t\n"),
   7, 9, "dtype mismatch in '+': tensor f32[T, 64] and tensor i32[T] (cast one with .to(dtype))"},
  {"BoolInArithmetic", program("", "    y = (x > 0.0) + x\n"),
   7, 9, "dtype mismatch in '+': tensor bool[T, 64] and tensor f32[T, 64] (cast one with .to(dtype))"},
  // where and maximum/minimum are typed as '+' is; their errors name them, not '+'.
  {"WhereDtypeMismatch", program("", "    y = where(x > 0.0, x, t)\n"),
   7, 9, "dtype mismatch in where: tensor f32[T, 64] and tensor i32[T] (cast one with .to(dtype))"},
  {"WhereBroadcastMismatch", program("", "    y = where(x > 0.0, x, e)\n"),
   7, 9, "shape mismatch in where: [T, 64] and [512, 64] do not broadcast (T vs 512)"},
  {"MaximumBoolOperands", program("", "    y = maximum(x > 0.0, x)\n"),
   7, 9, "dtype mismatch in maximum: tensor bool[T, 64] and tensor f32[T, 64] (cast one with .to(dtype))"},
  {"FloatConstantWithIntTensor", program("", "    y = t * 0.5\n"),
   7, 9, "dtype mismatch in '*': tensor i32[T] and float 0.5 (cast the tensor with .to(f32))"},
  {"WriteToLocal", program("", "    x[0, pos, :] = x\n"),
   7, 5, "cannot write to 'x': it is not a state (only `state` declarations can be written)"},
  {"WriteToParam", program("", "    e[pos] = x\n"),
   7, 5, "cannot write to 'e': it is not a state (only `state` declarations can be written)"},
  {"StateWriteShapeMismatch", program("", "    c[0, pos, :] = x.view(T, H, 16)\n"),
   7, 20, "state write value has shape [T, 4, 16], expected [T, 64] for c f32[2, 1024, 64]"},
  {"StateWriteIndexOutOfRange", program("", "    c[2, pos, :] = x\n"),
   7, 7, "index 2 is out of range for state c f32[2, 1024, 64]"},
  {"StateWriteUnsupportedForm", program("", "    c[0, :, :] = x\n"),
   7, 5, "unsupported state write: write `state[i, ..., :, pos, :] = value` (constant leading indices, one i32 index vector, ':' elsewhere)"},
  {"SelfRecursion", program("", "", kReturn, "fn r(a) = r(a) + 1\n"),
   10, 11, "recursive call: r -> r (fns are inlined at every call, so they cannot recurse)"},
  {"MutualRecursion", program("", "", kReturn, "fn f(a) = g(a)\nfn g(a) = f(a) * 2\n"),
   11, 11, "recursive call: f -> g -> f (fns are inlined at every call, so they cannot recurse)"},
  {"ConfigKeyMissingNoDefault", program("  const q = config.nope\n", ""),
   5, 13, "config key 'nope' is missing in config.json and has no default (write `config.nope ?? <default>`)"},
  {"ConfigKeyNullNoDefault", program("  const b = config.bos_token_id\n", ""),
   5, 13, "config key 'bos_token_id' is null in config.json and has no default (write `config.bos_token_id ?? <default>`)"},
  {"ConfigNestedKeyMissing", program("  const r = config.rope_parameters.factor\n", ""),
   5, 13, "config key 'rope_parameters.factor' is missing in config.json and has no default (write `config.rope_parameters.factor ?? <default>`)"},
  {"TemplateWithoutLayerIndex", program("  layers l in 0..2 {\n    param n: f32[D] = \"model.norm.weight\"\n  }\n", ""),
   6, 23, "param template \"model.norm.weight\" names no layer index: write {l} where the layer number goes"},
  {"TemplateUnknownPlaceholder", program("  layers l in 0..2 {\n    param n: f32[D] = \"model.layers.{k}.norm\"\n  }\n", ""),
   6, 23, "unknown placeholder '{k}' in tensor name \"model.layers.{k}.norm\": the layer index is {l}"},
  {"TemplateUnclosedPlaceholder", program("  layers l in 0..2 {\n    param n: f32[D] = \"model.layers.{l.norm\"\n  }\n", ""),
   6, 23, "unclosed '{' in tensor name \"model.layers.{l.norm\": a placeholder is {name}"},
  {"ErfOfAnInteger", program("", "    y = erf(t)\n"),
   7, 9, "erf needs a float tensor, found tensor i32[T]"},
  {"FnArity", program("", "    y = silu(x, x)\n"),
   7, 9, "fn 'silu' takes 1 argument, found 2"},
  {"FnImpure", program("", "    y = g(x)\n", kReturn, "fn g(a) = a * D\n"),
   11, 15, "fn 'g' uses 'D' of the model: fns are pure, pass it as an argument"},
  {"FnWritesState", program("", "    y = g(pos)\n", kReturn, "fn g(a) {\n  c[0, a, :] = a\n  return a\n}\n"),
   12, 3, "fn 'g' writes state: fns are pure, write state in forward"},
  {"ReturnTypeMismatch", program("", "", "    return x @ e.T\n"),
   7, 12, "forward returns f32[T, 512] but declares f32[T, 64]"},
  {"MissingReturn", program("", "", "    y = x\n"),
   8, 3, "forward ends without return"},
  {"ViewCountMismatch", program("", "    y = x.view(T, 3)\n"),
   7, 9, "cannot view tensor f32[T, 64] as [T, 3]: the element counts differ"},
  {"AxisOutOfRange", program("", "    y = sum(x, axis=2)\n"),
   7, 9, "axis 2 is out of range for rank 2"},
  {"ReductionWithoutAxis", program("", "    y = sum(x)\n"),
   7, 9, "sum needs axis="},
  {"RequireFails", program("  require D == 65, \"hidden size must be 65\"\n", ""),
   5, 3, "requirement failed: hidden size must be 65"},
  // A require's message is checked whether or not its condition holds: one that is no string was
  // dropped ("requirement failed", no reason), and one naming nothing passed until a config failed
  // the condition (found by a new-user pass).
  {"RequireMessageNotAString", program("  require D == 65, D\n", ""),
   5, 20, "a require's message must be a string, found int 64 (config.hidden_size)"},
  {"RequireMessageNotAStringWhereItHolds", program("  require D == 64, 5\n", ""),
   5, 20, "a require's message must be a string, found int 5"},
  {"RequireMessageUnknownNameWhereItHolds", program("  require D == 64, mesage\n", ""),
   5, 20, "unknown name 'mesage'"},
  {"RequireMessageNotAStringInTheForward", program("", "    require D == 64, D\n"),
   7, 22, "a require's message must be a string, found int 64 (config.hidden_size)"},
  // A fn whose require fails ends there: its `x @ x` would only add a shape mismatch.
  {"RequireFailsInAFn", program("", "    y = odd_only(x)\n", kReturn,
                                "fn odd_only(x) {\n  require x.shape[-1] % 2 == 1, \"odd widths only\"\n  return x @ x\n}\n"),
   12, 3, "requirement failed: odd widths only"},
  {"DimNotInteger", program("  dims { Z = config.rms_norm_eps }\n", ""),
   5, 14, "dim 'Z' must be a positive integer of at most 2^40, found float 1e-06 (config.rms_norm_eps)"},
  {"DimAboveTheLimit", program("  dims { Z = 2000000000000 }\n", ""),
   5, 14, "dim 'Z' must be a positive integer of at most 2^40, found int 2000000000000"},
  // A number literal out of range is reported by the lexer alone: the dim or view check that
  // uses it does not report the clamped value (INT64_MAX, inf) a second time.
  {"IntegerLiteralOutOfRangeAsADim", program("  dims { Z = 99999999999999999999 }\n", ""),
   5, 14, "integer 99999999999999999999 is out of range"},
  {"IntegerLiteralOutOfRangeInAView", program("", "    y = x.view(T, 99999999999999999999)\n"),
   7, 19, "integer 99999999999999999999 is out of range"},
  {"FloatLiteralOutOfRangeAsAParamDim", program("  param q: f32[1e999] = \"q\"\n", ""),
   5, 16, "number 1e999 is out of range"},
  {"UnknownDtype", program("  param q: f64[D] = \"q\"\n", ""),
   5, 12, "unknown dtype 'f64': expected bf16, f16, f32, i32, bool or a `dtype` declaration"},
  {"TernaryConditionNotBool", program("  const k = config.hidden_size ? 1 : 2\n", ""),
   5, 13, "the condition of '? :' must be a compile-time bool, found int 64 (config.hidden_size) (for tensors use where(cond, a, b))"},
  {"GatherWithFloatIndex", program("", "    y = e[x]\n"),
   7, 11, "a gather index must be i32, found tensor f32[T, 64]"},
  {"ForOverNonLayers", program("", "    for l in blocks {\n    }\n"),
   7, 14, "expected 'layers' after 'in', found 'blocks'"},
  {"DuplicateDeclaration", program("  const D = 3\n", ""),
   5, 9, "'D' is already declared"},
  {"BindingShadowsParam", program("", "    e = x\n"),
   7, 5, "'e' is a param of the model; bind a different name"},
  {"RuntimeDimArithmetic", program("", "    y = x.view(T + 1, D)\n"),
   7, 16, "operator '+' cannot combine runtime dim T and int 1: a runtime dim can only be multiplied by a positive constant"},
  {"SliceOfRuntimeDim", program("", "    y = x[1:3]\n"),
   7, 11, "cannot index the runtime dim T with constants (only ':' is allowed on it)"},
  {"MeanOverRuntimeDim", program("", "    y = mean(x, axis=0)\n"),
   7, 9, "mean over the runtime dim T is not supported"},
  {"PositionalAfterKeyword", program("", "    y = sum(axis=0, x)\n"),
   7, 21, "positional argument after a keyword argument"},
  {"RepeatedKeyword", program("", "    y = sum(x, axis=1, axis=0)\n"),
   7, 29, "keyword argument 'axis' repeated"},
  {"NotAFunction", program("", "    y = x(1)\n"),
   7, 9, "'x' is not a function"},
  {"StatementWithoutAssign", program("", "    x + 1\n"),
   7, 10, "expected '=' after the expression (a statement is `name = ...`, a state write `s[...] = ...`, `for` or `return`), found end of line"},
  {"ReturnInsideFor", program(kLayers, "    for l in layers {\n" "      return x\n" "    }\n"),
   11, 7, "return inside 'for': forward returns once, after the layers"},
  {"ConcatShapeMismatch", program("", "    y = concat(x, e, axis=0)\n"),
   7, 19, "concat along axis 0 of [T, 64] and [512, 64]: mixed runtime dims"},
  // Mixtures of experts (docs/language.md).
  {"TopkBoundToOneName", program("", "    y = topk(x, 2, axis=-1)\n"),
   7, 5, "the value has 2 results (tensor f32[T, 2], tensor i32[T, 2]): bind one name each (`a, b = ...`)"},
  {"TwoNamesForOneValue", program("", "    a, b = x\n"),
   7, 12, "2 names to bind, but the value is tensor f32[T, 64]"},
  {"TopkKAboveTheAxis", program("", "    w, i = topk(x, 65, axis=-1)\n"),
   7, 20, "topk's k must be between 1 and the axis length 64, found 65"},
  {"TopkAlongTokens", program("", "    w, i = topk(x, 1, axis=0)\n"),
   7, 28, "topk along the runtime dim T would make a token's result depend on the other tokens of the step"},
  {"ExpertTemplateWithoutIndex",
   program("  layers l in 0..2 {\n    experts j in 0..4 {\n      param w: f32[D] = \"model.layers.{l}.w\"\n    }\n  }\n", ""),
   7, 25, "param template \"model.layers.{l}.w\" names no expert index: write {j} where the expert number goes"},
  {"TooManyExperts",
   program("  layers l in 0..2 {\n    experts j in 0..10000000 {\n      param w: f32[D] = \"model.layers.{l}.{j}.w\"\n"
           "    }\n  }\n",
           ""),
   6, 18, "experts range 0..10000000 has 10000000 experts, at most 4096 are supported"},
  {"MoeIndexNotPerSlot", program("", "    y = moe(x, t, x, e, e, e)\n"),
   7, 16, "moe's idx must be i32[T, K] with x's T, found tensor i32[T] for x tensor f32[T, 64]"},
  {"ContainsOfANonList", program("  const cc = contains(config.hidden_size, 1)\n", ""),
   5, 23, "config key 'hidden_size' is not a list"},
};

// gtest lists each case as ".../<index>  # GetParam() = <PrintTo>"; CMake 3.25's
// gtest_discover_tests turns that into the ctest name ".../<case name>" only for index suffixes,
// so no name generator here (with one, the listing's comment, a raw byte dump with pointers by
// default, became part of every ctest name).
INSTANTIATE_TEST_SUITE_P(Lang, BadProgram, ::testing::ValuesIn(kCases));

}  // namespace


namespace {

TEST(Diagnostics, IndependentErrorsAreAllReportedInOneRun) {
  std::string src = program("  const q = config.nope\n",
                            "    y = x +\n"          // line 8: syntax error
                            "    z = w * 2\n"        // line 9: unknown name
                            "    u = x @ e\n");      // line 10: shape mismatch
  auto out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 4u) << out.rendered;
  // Syntax errors come first (the parse), then the checker's in source order.
  EXPECT_EQ(out.diagnostics[0].span.line, 8);
  EXPECT_EQ(out.diagnostics[1].span.line, 5);
  EXPECT_EQ(out.diagnostics[2].span.line, 9);
  EXPECT_EQ(out.diagnostics[3].span.line, 10);
  EXPECT_NE(out.rendered.find("4 errors"), std::string::npos);
}

// A statement dropped at a syntax error leaves its names unbound: their later uses were each an
// "unknown name" that said nothing new (a new user's pass: a missing ')' at one line, "unknown
// name 'x'" at another). Names no dropped statement binds are still reported.
TEST(Diagnostics, NamesADroppedStatementWouldBindAreNotUnknown) {
  std::string src = program("",
                            "    y, v = e[t] +\n"     // line 7: the expression ends early
                            "    u = y * v\n"         // y and v were dropped: no error
                            "    z = w * u\n",        // line 9: w is unknown
                            "    return z\n");
  auto out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 2u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, 7) << out.rendered;
  EXPECT_EQ(out.diagnostics[1].span.line, 9) << out.rendered;
  EXPECT_EQ(out.diagnostics[1].message, "unknown name 'w'");
  // An unclosed bracket takes the lines after it into the dropped statement, up to the block's
  // end (newlines do not end a statement inside brackets): one error, for the bracket. (Nothing
  // after it is elaborated here, so this case holds with or without the dropped names.)
  src = program("", "    y = e[t\n    a = y * 2\n", "    return a\n");
  out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, 8) << out.rendered;
}

// A stray character ends a statement's parse where it stands: `y = e[t] × 2` was kept as
// `y = e[t]`, and the lines using y then failed with false shape errors (a new user's pass: an
// empty slice of c_attn's output). Such a statement is dropped like any other with a syntax
// error, its names hidden: one error. Likewise a dim with junk after its value.
TEST(Diagnostics, AStatementCutByAStrayCharacterIsDropped) {
  std::string src = program("", "    y = x \xc3\x97 e[t]\n    z = y[:, 0:32] + x[:, 0:32]\n", "    return z\n");
  auto out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, 7) << out.rendered;
  EXPECT_NE(out.diagnostics[0].message.find("unexpected character"), std::string::npos) << out.rendered;
  src = "model m {\n  dims { D = config.hidden_size \xc3\x97 2; V = config.vocab_size }\n"
        "  param e: f32[V, D] = \"model.embed_tokens.weight\"\n"
        "  forward(t: i32[T]) -> f32[T, D] {\n    return e[t]\n  }\n}\n";
  out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_NE(out.diagnostics[0].message.find("unexpected character"), std::string::npos) << out.rendered;
}

// The hiding is scoped: a use before the dropped statement, or in a fn when the forward dropped
// the name, is still unknown (a third new-user pass found both hidden); a model-level declaration
// dropped with an open bracket (which swallows the layers block too) hides its own name and the
// missing layers block, nothing else.
TEST(Diagnostics, DroppedNamesHideOnlyLaterUsesInTheirModelOrFn) {
  std::string src = program("", "    u = x * w\n    w = x +\n", "    return u\n");  // w used at line 7, dropped at 8
  auto out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 2u) << out.rendered;
  EXPECT_EQ(out.diagnostics[1].message, "unknown name 'w'") << out.rendered;
  EXPECT_EQ(out.diagnostics[1].span.line, 7) << out.rendered;
  src = program("", "    h2 = x +\n", kReturn, "fn g(a) = a * h2\n");
  out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 2u) << out.rendered;
  EXPECT_EQ(out.diagnostics[1].message, "unknown name 'h2'") << out.rendered;
  src = program("  const k = (config.rms_norm_eps ?? 1e-6\n" + std::string(kLayers), "    for l in layers {\n      x = x * k\n    }\n");
  out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
}

// A file cut short misses both the block's and the model's '}' at its end: one error there.
TEST(Diagnostics, OneErrorAPosition) {
  const std::string src = "model m {\n  forward(t: i32[T]) -> f32[T] {\n    return t\n";
  auto out = lg::lang::check_source("cut.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].message, "expected '}' to close the block, found end of file") << out.rendered;
}

TEST(Diagnostics, ErrorsInsideAFnNoteTheCallSite) {
  std::string src = program("", "    y = g(x)\n", kReturn, "fn g(a) = a @ a\n");
  auto out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  const auto& d = out.diagnostics[0];
  EXPECT_EQ(d.span.line, 11);
  EXPECT_EQ(d.span.col, 11);
  EXPECT_EQ(d.message, "shape mismatch in '@': [T, 64] @ [T, 64]: inner dims 64 and T differ");
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].span.line, 7);
  EXPECT_EQ(d.notes[0].span.col, 9);
  EXPECT_EQ(d.notes[0].message, "in fn 'g', inlined here");
}

TEST(Diagnostics, ALayerBodyErrorIsReportedOnceNotPerLayer) {
  std::string src = program(kLayers, "    for l in layers {\n      x = x @ l.n\n    }\n");
  auto out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, 11);
  EXPECT_EQ(out.diagnostics[0].message,
            "wrong rank: '@' needs operands of rank 2 or more, found tensor f32[T, 64] @ tensor f32[64]");
}

// A `dtype` declaration that fails is reported once: the params, states and casts that name it
// are silently erroneous, instead of one "unknown dtype 'W'" per use (15 for qwen3.lg before).
TEST(Diagnostics, ABadDtypeDeclarationIsReportedOnce) {
  for (const std::string value : {"\"bfloat17\"", "config.nope", "3"}) {
    std::string src = program("  dtype W = " + value + "\n  param w: W[D, D] = \"model.norm.weight\"\n" +
                                  "  layers l in 0..2 {\n    param n: W[D] = \"model.layers.{l}.norm\"\n  }\n",
                              "    y = x.to(W) @ w\n    for l in layers {\n      x = x * l.n\n    }\n");
    auto out = lg::lang::check_source("bad.lg", src, config(), {});
    ASSERT_EQ(out.diagnostics.size(), 1u) << value << "\n" << out.rendered;
    EXPECT_EQ(out.diagnostics[0].span.line, 5) << out.rendered;
  }
  // A dtype name never declared is still reported at each use.
  auto undeclared = lg::lang::check_source("bad.lg", program("  param w: X[D] = \"a\"\n  param v: X[D] = \"b\"\n", ""),
                                           config(), {});
  EXPECT_EQ(undeclared.diagnostics.size(), 2u) << undeclared.rendered;
  // The shipped qwen3.lg with its dtype line broken: one error, at that line.
  std::ifstream in(std::string(LG_SOURCE_DIR) + "/models/qwen3.lg");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string decl = "dtype W     = config.dtype ?? config.torch_dtype ?? \"bfloat16\"";
  const size_t at = text.find(decl);
  ASSERT_NE(at, std::string::npos) << "qwen3.lg's dtype line changed; update this test";
  text.replace(at, decl.size(), "dtype W     = \"bfloat17\"");
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
  auto qwen3 = lg::lang::check_source("qwen3.lg", text, config(), {});
  ASSERT_EQ(qwen3.diagnostics.size(), 1u) << qwen3.rendered;
  EXPECT_EQ(qwen3.diagnostics[0].span.line, line);
  EXPECT_EQ(qwen3.diagnostics[0].message, "unknown dtype \"bfloat17\": expected bf16, f16, f32 (or bfloat16, float16, float32)");
}

/// The quoted source line and the caret line of the first diagnostic in `rendered`.
std::pair<std::string, std::string> quoted_lines(const std::string& rendered) {
  const size_t a = rendered.find('\n') + 1, b = rendered.find('\n', a), c = rendered.find('\n', b + 1);
  return {rendered.substr(a, b - a), rendered.substr(b + 1, c - b - 1)};
}

// A line of 100k '(' used to be echoed whole (~100 KB per diagnostic); the quote is now a window
// of 160 columns around the fault, with "..." where it was cut and the caret still under the fault.
TEST(Diagnostics, ALongLineIsQuotedAsAWindowAroundTheFault) {
  auto parens = lg::lang::check_source("bad.lg", std::string(100000, '(') + "\n", config(), {});
  ASSERT_FALSE(parens.ok);
  EXPECT_LT(parens.rendered.size(), 600u) << parens.rendered.size();
  EXPECT_NE(parens.rendered.find(" 1 | " + std::string(160, '(') + "...\n"), std::string::npos) << parens.rendered;

  // The fault ('$') far inside a long line, and near its end.
  for (size_t lead : {5000u, 400u, 60u}) {
    std::string line = "    y = x";
    while (line.size() < lead) line += " + x";
    const size_t at = line.size() + 1;  // 0-based byte column of '$'
    line += " $ + x + x + x";
    auto out = lg::lang::check_source("bad.lg", program("", line + "\n"), config(), {});
    ASSERT_FALSE(out.ok);
    EXPECT_EQ(out.diagnostics[0].span.col, static_cast<int>(at) + 1) << out.rendered;
    const auto [src, caret] = quoted_lines(out.rendered);
    EXPECT_LE(src.size(), 6u + 3 + 160 + 3) << src;
    EXPECT_EQ(src.rfind(" 7 | ...", 0) == 0, line.size() > 160) << src;
    ASSERT_NE(caret.find('^'), std::string::npos) << out.rendered;
    EXPECT_EQ(src[caret.find('^')], '$') << src << "\n" << caret;
  }
}

// A file starting with the bytes 00 ff fe used to put them raw on the terminal; other bytes than
// printable ASCII, tabs and valid UTF-8 are shown escaped, and the caret stays under its column.
TEST(Diagnostics, NonPrintableBytesInTheQuotedLineAreEscaped) {
  auto bin = lg::lang::check_source("bad.lg", std::string("\0\xff\xfe model x\n", 13), config(), {});
  ASSERT_FALSE(bin.ok);
  EXPECT_NE(bin.rendered.find(" 1 | \\x00\\xff\\xfe model x\n"), std::string::npos) << bin.rendered;
  for (char c : bin.rendered) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << static_cast<int>(c);

  // UTF-8 of a C1 control (U+009B, a terminal's CSI) is escaped as the bytes it is.
  auto c1 = lg::lang::check_source("bad.lg", program("", "    y = x \xc2\x9b $\n"), config(), {});
  ASSERT_FALSE(c1.ok);
  EXPECT_NE(c1.rendered.find("y = x \\xc2\\x9b $"), std::string::npos) << c1.rendered;

  // Valid UTF-8 (a comment, one column per character) stays as it is; a bad byte before the fault
  // is escaped and the caret moves with it.
  auto utf8 = lg::lang::check_source("bad.lg", program("", "    y = x # h\xc3\xa9\n    z = \x01 $\n"), config(), {});
  ASSERT_FALSE(utf8.ok);
  EXPECT_EQ(utf8.rendered.find("h\xc3\xa9"), std::string::npos) << "only the faulty line is quoted";
  const auto [src, caret] = quoted_lines(utf8.rendered);
  EXPECT_NE(src.find("z = \\x01 $"), std::string::npos) << utf8.rendered;
  ASSERT_NE(caret.find('^'), std::string::npos) << utf8.rendered;
  EXPECT_EQ(src.substr(caret.find('^'), 4), "\\x01") << src << "\n" << caret;
}

// A binary file (NULs, controls, bytes that are no UTF-8) is one error at its first NUL, and its
// quoted line stays within the window as printed: it was 50 errors, one a stray byte, each quoting
// a line of up to 640 columns of escapes. (Its bytes are ASCII or 0xff, one byte a character, so
// that the quoted line's bytes are its columns.)
TEST(Diagnostics, ABinaryFileIsOneErrorNotATextFile) {
  std::string bytes;
  uint32_t state = 12345;
  for (int k = 0; k < 3000; ++k) {
    state = state * 1664525u + 1013904223u;
    bytes += static_cast<char>((state >> 16) & 1 ? 0xff : (state >> 24) & 0x7f);
  }
  const size_t nul = bytes.find('\0');
  ASSERT_NE(nul, std::string::npos);
  auto out = lg::lang::check_source("bin.lg", bytes, config(), {});
  ASSERT_FALSE(out.ok);
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].message, "not a text file: a NUL byte (0x00) here; a .lg program is UTF-8 text");
  const auto [src, caret] = quoted_lines(out.rendered);
  EXPECT_LE(src.size(), 6u + 3 + 160 + 3) << src;
  ASSERT_NE(caret.find('^'), std::string::npos) << out.rendered;
  EXPECT_EQ(src.substr(caret.find('^'), 4), "\\x00") << src << "\n" << caret;
  for (char c : out.rendered) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << static_cast<int>(c);
}

// A typo of a name that exists is suggested (as rustc and clang do); a name far from every other,
// or of one or two letters, is not.
TEST(Diagnostics, TyposOfExistingNamesAreSuggested) {
  struct Typo {  // (not `Case`: lower_test.cpp's, in the same unity file)
    std::string decls, body, message;
  };
  const std::vector<Typo> cases = {
      {"", "    y = rms_nrom(x, x, 1e-6)\n", "unknown function 'rms_nrom'; did you mean 'rms_norm'?"},
      {"", "    y = x + hiden\n", "unknown name 'hiden'"},
      {"  const hidden = 2.0\n", "    y = x * hiden\n", "unknown name 'hiden'; did you mean 'hidden'?"},
      {"  const eps = config.rms_norm_epsilon\n", "", "config key 'rms_norm_epsilon' is missing in config.json and has "
                                                     "no default (write `config.rms_norm_epsilon ?? <default>`); did "
                                                     "you mean 'rms_norm_eps'?"},
      {"", "    y = x.mean(-1)\n", "tensors have no method 'mean': it is a function, mean(x, axis=k)"},
      // torch's keyword spelling gets the same answer (it said "method sum takes positional arguments only").
      {"", "    y = x.sum(axis=1)\n", "tensors have no method 'sum': it is a function, sum(x, axis=k)"},
      {"", "    y = x.view(shape=2)\n", "method view takes positional arguments only"},
      {"", "    y = x.exp()\n", "tensors have no method 'exp': it is a function, exp(x)"},
      {"", "    y = x.has()\n", "tensors have no method 'has'"},
      {"  const h = config.hiden_size\n", "", "config key 'hiden_size' is missing in config.json and has no default "
                                              "(write `config.hiden_size ?? <default>`); did you mean 'hidden_size'?"},
      // Another word, not a typo: a different first letter (no suggestion of intermediate_size).
      {"  const f = config.moe_intermediate_size\n", "", "config key 'moe_intermediate_size' is missing in config.json "
                                                         "and has no default (write `config.moe_intermediate_size ?? "
                                                         "<default>`)"},
      {"", "    y = x.veiw(-1)\n", "tensors have no method 'veiw'; did you mean 'view'?"},
  };
  for (const Typo& c : cases) {
    auto out = lg::lang::check_source("typo.lg", program(c.decls, c.body), config(), {});
    ASSERT_FALSE(out.ok) << c.body;
    ASSERT_FALSE(out.diagnostics.empty());
    EXPECT_EQ(out.diagnostics[0].message, c.message) << out.rendered;
  }
  // A layer's param.
  const std::string layered = "model m {\n  dims { D = config.hidden_size; V = config.vocab_size }\n"
                              "  param e: f32[V, D] = \"model.embed_tokens.weight\"\n  state c: f32[2, S, D]\n"
                              "  layers l in 0..2 {\n    param wq: f32[D, D] = \"model.layers.{l}.self_attn.q_proj.weight\"\n  }\n"
                              "  forward(t: i32[T], pos: i32[T]) -> f32[T, D] {\n    x = e[t]\n"
                              "    for l in layers {\n      x = x @ l.wqq.T\n    }\n    c[0, pos, :] = x\n"
                              "    return x\n  }\n}\n";
  auto out = lg::lang::check_source("typo.lg", layered, config(), {});
  ASSERT_FALSE(out.ok);
  EXPECT_EQ(out.diagnostics[0].message, "layers have no param 'wqq'; did you mean 'wq'?") << out.rendered;
}

// A view's -1 is shown as written (it was shown as the 1 held in its place).
TEST(Diagnostics, AViewThatDoesNotDivideShowsItsMinusOne) {
  auto out = lg::lang::check_source("bad.lg", program("", "    y = x.view(T, 7, -1)\n"), config(), {});
  ASSERT_FALSE(out.ok);
  const int64_t D = config()["hidden_size"].get<int64_t>();
  ASSERT_NE(D % 7, 0) << "the test needs a hidden size that 7 does not divide";
  EXPECT_EQ(out.diagnostics[0].message,
            "cannot view tensor f32[T, " + std::to_string(D) + "] as [T, 7, -1]: the sizes do not divide");
}

// max_position_embeddings 0 is refused as every other dim of size 0 is; it checked clean with
// states of 0 positions and a note, and only lg run refused it.
TEST(Diagnostics, AContextOfZeroPositionsIsRefused) {
  nlohmann::json c = config();
  for (const int64_t bad : {0, -1}) {  // -1 too: a sentinel of the first fix let it through
    c["max_position_embeddings"] = bad;
    auto out = lg::lang::check_source("m.lg", program("", ""), c, {});
    ASSERT_FALSE(out.ok) << bad;
    EXPECT_NE(out.rendered.find("max sequence length " + std::to_string(bad) +
                                " (config max_position_embeddings) is out of range: it must be between 1 and "),
              std::string::npos)
        << out.rendered;
  }
}

// `h == ...` for `h = ...` is one error: its uses after it were each "unknown name 'h'" too.
TEST(Diagnostics, AnAssignmentTypedAsEqualsIsOneError) {
  auto out = lg::lang::check_source("bad.lg", program("", "    h == x + 1.0\n    y = h * 2.0\n", "    return y + h\n"),
                                    config(), {});
  ASSERT_FALSE(out.ok);
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, 7) << out.rendered;
}

// A slice that Python's clamping leaves empty is named as written ("empty slice 16:16" was all
// `q[..., 100:]` said), with the bounds it clamped to.
TEST(Diagnostics, AnEmptySliceIsNamedAsWritten) {
  auto out = lg::lang::check_source("bad.lg", program("", "    y = x[..., 100000:]\n"), config(), {});
  ASSERT_FALSE(out.ok);
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  const int64_t D = config()["hidden_size"].get<int64_t>();
  EXPECT_EQ(out.diagnostics[0].message, "empty slice 100000: of a dim of size " + std::to_string(D) + " (clamped to " +
                                            std::to_string(D) + ":" + std::to_string(D) +
                                            "); a dim of size 0 is an error here");
  auto reversed = lg::lang::check_source("bad.lg", program("", "    y = x[..., 3:2]\n"), config(), {});
  ASSERT_FALSE(reversed.ok);
  EXPECT_EQ(reversed.diagnostics[0].message, "empty slice 3:2 of a dim of size " + std::to_string(D) +
                                                 "; a dim of size 0 is an error here");
}

// A program past kMaxProgramBytes is one error before it is lexed, rather than read until the IR
// node bound refuses it (what the cap bounds is measured at kMaxProgramBytes).
TEST(Diagnostics, AProgramPastTheSizeCapIsRefusedAtOnce) {
  std::string body;
  while (body.size() <= lg::lang::kMaxProgramBytes) body += "    x = x + 1.0\n";
  auto out = lg::lang::check_source("big.lg", program("", body), config(), {});
  ASSERT_FALSE(out.ok);
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered.substr(0, 2000);
  EXPECT_NE(out.diagnostics[0].message.find("lanegraph reads .lg programs of at most 4 MiB"), std::string::npos)
      << out.diagnostics[0].message;
}

// A UTF-8 byte-order mark (Windows editors write one) starts a file as Python allows it; it was
// "unexpected character byte 239" at 1:1.
TEST(Diagnostics, AByteOrderMarkIsSkipped) {
  auto ok = lg::lang::check_source("bom.lg", "\xEF\xBB\xBF" + program("", ""), config(), {});
  EXPECT_TRUE(ok.ok) << ok.rendered;
  // An error on line 1 has its column and caret where they are without the mark.
  auto bad = lg::lang::check_source("bom.lg", "\xEF\xBB\xBFmodel m $ {\n}\n", config(), {});
  ASSERT_FALSE(bad.ok);
  EXPECT_EQ(bad.diagnostics[0].span.col, 9) << bad.rendered;
  const auto [src, caret] = quoted_lines(bad.rendered);
  ASSERT_NE(caret.find('^'), std::string::npos) << bad.rendered;
  EXPECT_EQ(src[caret.find('^')], '$') << src << "\n" << caret;
}

// Characters that act on a terminal (a C1 control's UTF-8, a right-to-left override, a zero-width
// space) are named by number outside strings, never put raw into a message or a quoted line.
TEST(Diagnostics, CharactersThatActOnATerminalAreNamedByNumber) {
  for (const auto& [bytes, cp] : std::vector<std::pair<std::string, std::string>>{
           {"\xc2\x85", "U+0085"}, {"\xe2\x80\xae", "U+202E"}, {"\xe2\x80\x8b", "U+200B"}}) {
    auto out = lg::lang::check_source("bad.lg", program("", "    y = x + " + bytes + "\n"), config(), {});
    ASSERT_FALSE(out.ok);
    EXPECT_EQ(out.diagnostics[0].message, "unexpected character " + cp + " (a control or invisible formatting character)");
    for (char c : out.rendered) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << cp << ": " << static_cast<int>(c);
  }
}

// UTF-8 characters of two, three and four bytes stay accepted in comments and strings.
TEST(Diagnostics, ValidUtf8InCommentsAndStringsIsAccepted) {
  const std::string comment = "    # caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9d\x84\x9e\n";
  auto ok = lg::lang::check_source("good.lg", program("  param q: f32[D] = \"model.norm.w\xc3\xa9\"\n", comment),
                                   config(), {});
  EXPECT_TRUE(ok.ok) << ok.rendered;
}

// num_hidden_layers 100000 is refused at the layers block; the `for l in layers` of the forward
// used to add "the model has no layers block to iterate".
TEST(Diagnostics, ARefusedLayersRangeIsReportedOnce) {
  nlohmann::json c = config();
  c["num_hidden_layers"] = 100000;
  std::ifstream in(std::string(LG_SOURCE_DIR) + "/models/qwen3.lg");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto out = lg::lang::check_source("qwen3.lg", text, c, {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_NE(out.diagnostics[0].message.find("at most 4096 layers"), std::string::npos) << out.rendered;
  // Without any layers block the `for` is still an error.
  auto none = lg::lang::check_source("bad.lg", program("", "    for l in layers {\n      x = x\n    }\n"), config(), {});
  ASSERT_EQ(none.diagnostics.size(), 1u) << none.rendered;
  EXPECT_EQ(none.diagnostics[0].message, "the model has no layers block to iterate");
}

// Each case prints as its name (gtest's listing, and so the ctest names, carried a byte dump).
TEST(Diagnostics, NoInputCanNestWithoutBound) {
  std::string deep = "    y = " + std::string(5000, '(') + "x" + std::string(5000, ')') + "\n";
  auto out = lg::lang::check_source("bad.lg", program("", deep), config(), {});
  ASSERT_FALSE(out.ok);
  EXPECT_EQ(out.diagnostics[0].message, "nesting too deep: more than 200 levels");
}

// docs/language.md: an operand in parentheses takes two of the 200 levels, so about 100 nested
// parentheses are the most a statement holds.
TEST(Diagnostics, AboutAHundredNestedParenthesesAreTheBound) {
  auto paren = [](int n) { return "    y = " + std::string(n, '(') + "x" + std::string(n, ')') + "\n"; };
  EXPECT_TRUE(lg::lang::check_source("ok.lg", program("", paren(90)), config(), {}).ok);
  auto deep = lg::lang::check_source("bad.lg", program("", paren(110)), config(), {});
  ASSERT_FALSE(deep.ok);
  EXPECT_EQ(deep.diagnostics[0].message, "nesting too deep: more than 200 levels");
}

TEST(Diagnostics, UnrollingPastTheNodeBoundIsAnError) {
  lg::lang::BindOptions opts;
  opts.max_nodes = 20;
  std::string src = program(kLayers, "    for l in layers {\n      x = rms_norm(x, l.n, 1e-6) + x\n    }\n");
  auto out = lg::lang::check_source("bad.lg", src, config(), opts);
  ASSERT_FALSE(out.ok);
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].message,
            "program too large: more than 20 IR nodes after unrolling layers and inlining fns");
}

TEST(Diagnostics, MissingModelBlock) {
  auto out = lg::lang::check_source("bad.lg", "fn f(x) = x\n", config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u);
  EXPECT_EQ(out.diagnostics[0].message, "expected a `model` block, found none in the file");
}

}  // namespace

namespace {

TEST(Diagnostics, NamesInAnUncalledFnAreStillResolved) {
  auto out = lg::lang::check_source("bad.lg", program("", "", kReturn, "fn unused(a) = a * b\n"), config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, 10);
  EXPECT_EQ(out.diagnostics[0].span.col, 20);
  EXPECT_EQ(out.diagnostics[0].message, "unknown name 'b'");
}

}  // namespace

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A config of another family is refused by the program's model_type `require` alone: before,
// qwen3.lg with a Gemma 3 config first said "config key 'rope_theta' is missing", gpt2.lg with a
// Llama config four "n_embd/n_head/... missing" errors, and mistral.lg with a Llama 3 config
// added "implements the default RoPE only". Every shipped program against every other family's
// fixture config: exactly one error, the model_type one, at that program's require line.
TEST(Diagnostics, AConfigOfAnotherFamilyGetsOnlyTheModelTypeError) {
  const std::string programs[] = {"gemma3_text", "gpt2", "llama", "mistral", "phi3", "qwen2", "qwen3", "qwen3_moe"};
  const std::string fixtures[] = {"tiny-gemma3", "tiny-gpt2",  "tiny-llama3", "tiny-mistral",
                                  "tiny-phi3",   "tiny-qwen2", "tiny-qwen3",  "tiny-qwen3-moe"};
  int refused = 0;
  for (const auto& name : programs) {
    const std::string text = read_text(std::string(LG_SOURCE_DIR) + "/models/" + name + ".lg");
    for (const auto& fixture : fixtures) {
      std::ifstream in(std::string(LG_SHARED_DIR) + "/fixtures/" + fixture + "/config.json");
      const auto cfg = nlohmann::json::parse(in);
      auto out = lg::lang::check_source(name + ".lg", text, cfg, {});
      if (cfg.at("model_type") == name) {
        EXPECT_TRUE(out.ok) << name << " / " << fixture << ":\n" << out.rendered;
        continue;
      }
      ++refused;
      ASSERT_EQ(out.diagnostics.size(), 1u) << name << " / " << fixture << ":\n" << out.rendered;
      EXPECT_EQ(out.diagnostics[0].message.rfind("requirement failed: " + name + ".lg is the forward of config model_type \"" +
                                                     name + "\"",
                                                 0),
                0u)
          << out.rendered;
      const size_t at = text.find("require (config.model_type");
      ASSERT_NE(at, std::string::npos) << name;
      EXPECT_EQ(out.diagnostics[0].span.line, 1 + std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(at), '\n'))
          << out.rendered;
    }
  }
  EXPECT_EQ(refused, 8 * 7);  // every fixture is one program's family
}

// Every family's transformers config class (5.17) types tie_word_embeddings `bool` and its strict
// validation refuses an explicit null. `config.tie_word_embeddings ?? <default>` read a null as
// the default: gpt2.lg and gemma3_text.lg tied the LM head, the others untied it. Each program now
// refuses it with one error naming the field; absent is still the class's default.
TEST(Diagnostics, ANullTieWordEmbeddingsIsRefusedByEveryProgram) {
  const std::pair<std::string, std::string> families[] = {
      {"gemma3_text", "tiny-gemma3"}, {"gpt2", "tiny-gpt2"},   {"llama", "tiny-llama3"}, {"mistral", "tiny-mistral"},
      {"phi3", "tiny-phi3"},          {"qwen2", "tiny-qwen2"}, {"qwen3", "tiny-qwen3"},  {"qwen3_moe", "tiny-qwen3-moe"}};
  for (const auto& [name, fixture] : families) {
    SCOPED_TRACE(name);
    const std::string path = std::string(LG_SOURCE_DIR) + "/models/" + name + ".lg";
    const std::string text = read_text(path);
    std::ifstream in(std::string(LG_SHARED_DIR) + "/fixtures/" + fixture + "/config.json");
    auto cfg = nlohmann::json::parse(in);
    cfg["tie_word_embeddings"] = nullptr;
    auto out = lg::lang::check_source(name + ".lg", text, cfg, {});
    ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
    EXPECT_EQ(out.diagnostics[0].message.rfind(
                  "requirement failed: " + name + ".lg: config.json's tie_word_embeddings is null", 0),
              0u)
        << out.rendered;
    // Absent: GPT2Config's and Gemma3TextConfig's default ties the head, the others' unties it.
    cfg.erase("tie_word_embeddings");
    const lg::ir::Graph g = lg::lang::lower_file(path, cfg, {.max_seq = 32});
    // (A tied head is the embedding's param: no param reads lm_head.weight.)
    const bool own_head = std::any_of(g.params.begin(), g.params.end(),
                                      [](const auto& p) { return p.tensor.ends_with("lm_head.weight"); });
    const bool tied_by_default = name == "gpt2" || name == "gemma3_text";
    EXPECT_EQ(own_head, !tied_by_default);
  }
}

// A query-heads-per-KV-head group past int32 (2^32 + 1 heads over 1 KV head) is refused at the
// attention, not wrapped into the IR where the verifier failed it after `lg check` passed.
TEST(Diagnostics, AnAttentionGroupPastInt32IsRefused) {
  const std::string text = read_text(std::string(LG_SOURCE_DIR) + "/models/qwen3.lg");
  std::ifstream in(std::string(LG_SHARED_DIR) + "/fixtures/tiny-qwen3/config.json");
  auto cfg = nlohmann::json::parse(in);
  cfg["num_attention_heads"] = (int64_t{1} << 32) + 1;
  cfg["num_key_value_heads"] = 1;
  auto out = lg::lang::check_source("qwen3.lg", text, cfg, {});
  ASSERT_FALSE(out.ok);
  ASSERT_FALSE(out.diagnostics.empty());
  EXPECT_EQ(out.diagnostics[0].message, "attention: 4294967297 query heads per KV head (4294967297 / 1) is more than the 2147483647 supported")
      << out.rendered;
}

// RoPE on an odd head dim (a config's head_dim 33) is the prelude's one require, at the rope call
// of the program: it was two shape mismatches inside the prelude's rope_freq.
TEST(Diagnostics, RopeOnAnOddHeadDimIsOneError) {
  const std::string src = program("", "    y = rope(x.view(T, H, 16)[..., :15], pos, 10000.0)\n");
  auto out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].message,
            "requirement failed: RoPE rotates pairs of channels: the head dim (x.shape[-1]) must be even")
      << out.rendered;
  EXPECT_NE(out.rendered.find("bad.lg:7:9: note: in fn 'rope', inlined here"), std::string::npos) << out.rendered;
}

// A state declared [.., D] where the program writes [.., Dh] rows: the write is the one error, with
// a note at the declaration; attention reading the state after it added "k and v differ".
TEST(Diagnostics, AStateOfTheWrongSizeIsOneErrorAtItsWrite) {
  const std::string src = program("  state k2: f32[H, S, D]\n",
                                  "    k = x.view(T, H, 16).transpose(0, 1)\n    k2[:, pos, :] = k\n"
                                  "    y = attention(k.transpose(0, 1), k2, k2, pos)\n");
  auto out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, 9) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].message, "state write value has shape [4, T, 16], expected [4, T, 64] for k2 f32[4, 1024, 64]")
      << out.rendered;
  EXPECT_NE(out.rendered.find("bad.lg:5:3: note: state k2 is declared here"), std::string::npos) << out.rendered;
}

// The requires that read only the config are checked first; a failed one ends the check, so the
// dims, params and forward that follow it (which read keys such a config lacks) add nothing.
TEST(Diagnostics, AFailedConfigRequireIsReportedFirstAndAlone) {
  const std::string src = program("  const w = config.no_such_key\n"
                                  "  require config.model_type == \"llama\", \"wrong family\"\n",
                                  "    y = nope\n");
  auto out = lg::lang::check_source("bad.lg", src, config(), {});
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, 6);
  EXPECT_EQ(out.diagnostics[0].message, "requirement failed: wrong family");
  // Requires on the config that hold leave the other errors as they were, in source order.
  const std::string held = program("  const w = config.no_such_key\n"
                                   "  require config.model_type == \"qwen3\", \"wrong family\"\n"
                                   "  require D == 65, \"hidden size must be 65\"\n",
                                   "");
  auto both = lg::lang::check_source("bad.lg", held, config(), {});
  ASSERT_EQ(both.diagnostics.size(), 2u) << both.rendered;
  EXPECT_EQ(both.diagnostics[0].span.line, 5);
  EXPECT_EQ(both.diagnostics[1].span.line, 7);
}

}  // namespace
