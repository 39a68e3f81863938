#include "server/prometheus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lg::server::prometheus {

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && !(bounds_[i] > bounds_[i - 1])))
      throw std::invalid_argument("histogram bounds must be finite and ascending");
  }
  counts_.assign(bounds_.size() + 1, 0);
}

void Histogram::observe(double value) {
  // The first bound >= value: Prometheus buckets are "less than or equal".
  const auto at = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  ++counts_[at];
  sum_ += value;
  ++count_;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);  // shortest text that reads back as the same double
}

std::string escape_label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string escape_help(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void Writer::family(const std::string& name, const std::string& help, const std::string& type) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape_help(help), name, type);
}

void Writer::sample(const std::string& name, double value, const Labels& labels) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out_ += ',';
      out_ += fmt::format("{}=\"{}\"", labels[i].first, escape_label_value(labels[i].second));
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += format_value(value);
  out_ += '\n';
}

void Writer::histogram(const std::string& name, const std::string& help, const Histogram& h) {
  family(name, help, "histogram");
  uint64_t cumulative = 0;
  const auto& bounds = h.upper_bounds();
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += h.bucket_counts()[i];
    const std::string le = i < bounds.size() ? format_value(bounds[i]) : "+Inf";
    sample(name + "_bucket", static_cast<double>(cumulative), {{"le", le}});
  }
  sample(name + "_sum", h.sum());
  sample(name + "_count", static_cast<double>(h.count()));
}

}  // namespace lg::server::prometheus
