#include "lang/value.h"

#include <fmt/format.h>

namespace lg::lang {

std::string format_dim(const ir::Dim& d, const std::vector<std::string>& names) {
  if (d.is_const()) return std::to_string(d.coeff);
  std::string sym = static_cast<size_t>(d.sym) < names.size() ? names[static_cast<size_t>(d.sym)] : "?";
  return d.coeff == 1 ? sym : std::to_string(d.coeff) + "*" + sym;
}

std::string format_shape(const ir::Shape& s, const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + format_dim(s[k], names);
  return out + "]";
}

std::string format_type(DType t, const ir::Shape& s, const std::vector<std::string>& names) {
  return std::string(dtype_name(t)) + format_shape(s, names);
}

namespace {
std::string describe_kind(const Value& v, const std::vector<std::string>& names) {
  switch (v.kind) {
    case Value::Kind::Error: return "an erroneous value";
    case Value::Kind::Int: return "int " + std::to_string(v.i);
    case Value::Kind::Float: return fmt::format("float {}", v.f);
    case Value::Kind::Bool: return v.b ? "bool true" : "bool false";
    case Value::Kind::Str: return "string \"" + v.s + "\"";
    case Value::Kind::Null: return "none";
    case Value::Kind::DType: return "dtype " + std::string(dtype_name(v.dtype));
    case Value::Kind::Dim: return "runtime dim " + format_dim(v.dim, names);
    case Value::Kind::Tensor: return "tensor " + format_type(v.dtype, v.shape, names);
    case Value::Kind::Layer: return "layer " + std::to_string(v.i);
    case Value::Kind::Shape: return "shape " + format_shape(v.shape, names);
    case Value::Kind::Object: return v.obj && v.obj->is_array() ? "a config array" : "a config object";
    case Value::Kind::Tuple: {
      std::string out = "(";
      for (size_t k = 0; k < v.items.size(); ++k) out += (k ? ", " : "") + describe(v.items[k], names);
      return out + ")";
    }
  }
  return "a value";
}
}  // namespace

std::string describe(const Value& v, const std::vector<std::string>& names) {
  std::string out = describe_kind(v, names);
  if (!v.config_key.empty()) out += " (config." + v.config_key + ")";
  return out;
}

}  // namespace lg::lang
