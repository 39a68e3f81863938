// Values the checker computes with: compile-time values (ints, floats, bools, strings, dtypes,
// runtime dims such as T, config sub-objects) and tensors (an IR value with its dtype and shape).
// Compile-time values are folded while checking; tensors become IR nodes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/dtype.h"

namespace lg::lang {

struct Value {
  enum class Kind : uint8_t {
    Error,   ///< already reported; every use of it stays silent (no cascades)
    Int,     ///< i: a compile-time integer (config dims, literals, x.shape[k])
    Float,   ///< f: a compile-time float (eps, theta)
    Bool,    ///< b
    Str,     ///< s: tensor names, config strings
    Null,    ///< `none`; a config key that is absent or null
    DType,   ///< dtype: bf16, f32, ... (as in x.to(f32))
    Dim,     ///< dim: a multiple of a runtime dim (T, 4*T); only usable in shapes
    Tensor,  ///< id, dtype, shape: an IR value
    Layer,   ///< i: the layer index of `for l in layers`
    Shape,   ///< shape: x.shape, indexable
    Object,  ///< obj: a config sub-object (only as a step of config.a.b), or a config array (s: its key), only to be indexed
    Tuple,   ///< items: several results (topk's values and indices), bound by `a, b = ...`
  };
  Kind kind = Kind::Error;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  DType dtype = DType::F32;
  ir::Dim dim;
  ir::ValueId id = -1;
  ir::Shape shape;
  const nlohmann::json* obj = nullptr;
  std::vector<Value> items;  ///< Tuple
  /// The config.json key a compile-time value was read from ("rms_norm_eps"), kept as the value is
  /// bound to a const and passed on, so that an error about the value names where it came from.
  std::string config_key;

  static Value error() { return {}; }
  static Value of_int(int64_t v) { Value x; x.kind = Kind::Int; x.i = v; return x; }
  static Value of_float(double v) { Value x; x.kind = Kind::Float; x.f = v; return x; }
  static Value of_bool(bool v) { Value x; x.kind = Kind::Bool; x.b = v; return x; }
  static Value of_str(std::string v) { Value x; x.kind = Kind::Str; x.s = std::move(v); return x; }
  static Value null() { Value x; x.kind = Kind::Null; return x; }
  static Value of_dtype(DType t) { Value x; x.kind = Kind::DType; x.dtype = t; return x; }
  static Value of_dim(ir::Dim d) {
    if (d.is_const()) return of_int(d.coeff);
    Value x; x.kind = Kind::Dim; x.dim = d; return x;
  }
  static Value tensor(ir::ValueId id, DType t, ir::Shape s) {
    Value x; x.kind = Kind::Tensor; x.id = id; x.dtype = t; x.shape = std::move(s); return x;
  }
  bool is_error() const { return kind == Kind::Error; }
  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  double as_double() const { return kind == Kind::Int ? static_cast<double>(i) : f; }
};

/// "int", "float", "bool", "string", "none", "dtype", "runtime dim", "f32[T, 64]", ...; a value read
/// from config.json adds its key: `string "1e-5" (config.rms_norm_eps)`.
std::string describe(const Value& v, const std::vector<std::string>& symbol_names);
/// "T", "64", "4*T".
std::string format_dim(const ir::Dim& d, const std::vector<std::string>& symbol_names);
/// "[T, 4, 128]".
std::string format_shape(const ir::Shape& s, const std::vector<std::string>& symbol_names);
/// "f32[T, 4, 128]".
std::string format_type(DType t, const ir::Shape& s, const std::vector<std::string>& symbol_names);

}  // namespace lg::lang
